//! The MCP stdio session: the capped line reader, and each line it yields answered by a
//! replay server (over the repository's demo cassette) and a world server (over the ticket
//! tracker), as `simtape mcp replay` and `simtape mcp world` answer them.

use std::io::BufReader;
use std::sync::OnceLock;

use simtape_mcp::lines::{read_line_bounded, LineRead};
use simtape_mcp::world::{World, WorldServer};
use simtape_mcp::{Cassette, Redactor, ReplayServer};

/// The lines read from one input before the target stops, as `serve_endpoints` answers at
/// most 64 requests. What a line can reach does not grow with the session: the servers keep
/// no state across lines but the world's state and their counters, which a few dozen calls
/// exercise. Without the cap AFL bred inputs of a thousand lines and 100 KB, each new only in
/// its hit counts (a loop run more often), and each ran 15 ms; the campaign slowed from about
/// 2,000 executions a second to about 100 (docs/fuzzing.md, campaign 4).
const LINES_MAX: usize = 64;

struct Servers {
    cassette: Cassette,
    world: World,
}

fn servers() -> &'static Servers {
    static SERVERS: OnceLock<Servers> = OnceLock::new();
    SERVERS.get_or_init(|| {
        let repo = crate::repo();
        Servers {
            cassette: Cassette::load(&repo.join("engine/mcp/tests/data/demo.json"))
                .expect("the demo cassette loads"),
            world: World::load(&repo.join("scenarios/worlds/ticket-tracker.json"))
                .expect("the ticket tracker world loads"),
        }
    })
}

/// The first byte sets the reader's buffer size (1 to 256 bytes, so lines span refills),
/// the second the line cap (0 to 1020 bytes, so over-long lines occur); the rest is the
/// client's stream.
pub(crate) fn mcp_stdio(data: &[u8]) {
    let [buffer, cap, stream @ ..] = data else {
        return;
    };
    let servers = servers();
    let mut replay = ReplayServer::new(&servers.cassette, Redactor::new(vec![]));
    let mut world = WorldServer::new(servers.world.clone(), 0);
    let _ = replay.opening();
    let mut reader = BufReader::with_capacity(usize::from(*buffer) + 1, stream);
    let cap = usize::from(*cap) * 4;
    for _ in 0..LINES_MAX {
        match read_line_bounded(&mut reader, cap) {
            Ok(Some(LineRead::Line(line))) => {
                let _ = replay.handle_line(&line);
                let _ = world.handle_line(&line);
            }
            Ok(Some(LineRead::TooLong(length))) => {
                let _ = ReplayServer::line_too_long(length);
            }
            Ok(None) | Err(_) => break,
        }
    }
    let _ = (replay.take_misses(), world.score());
}
