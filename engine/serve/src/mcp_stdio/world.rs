//! What `simtape mcp world` owes: the final state (`--state-out`) and the report (`--report`),
//! written atomically when the session ends, however it ends. While serving, each answered
//! `tools/call` is appended to a journal beside the report (else beside the state); the spec
//! text and seed are in its header, so a journal left by a killed server replays to the same
//! state and report ([`recover`]).

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::mcp_stdio::files::{absolute, recovered_path, write_json_atomic};
use crate::mcp_stdio::journal::{self, Journal};
use crate::mcp_stdio::stdio::{serve_lines, Ending, ServeInbox};
use simtape_mcp::error::McpError;
use simtape_mcp::lines::LineRead;
use simtape_mcp::replay::ReplayServer;
use simtape_mcp::world::server::{CallRecord, WorldReport, WorldServer};
use simtape_mcp::world::spec::World;

/// The `kind` of a world session's journal.
pub const JOURNAL_KIND: &str = "world";

/// Where a session's outputs go; either may be absent.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outputs {
    /// The final state.
    pub state: Option<PathBuf>,
    /// The report.
    pub report: Option<PathBuf>,
}

impl Outputs {
    /// The journal path: beside the report, else beside the state; none when nothing is owed.
    pub fn journal_path(&self) -> Option<PathBuf> {
        self.report
            .as_deref()
            .or(self.state.as_deref())
            .map(journal::path_for)
    }

    /// Writes the final state and the report, each atomically, and returns the report.
    pub fn write(&self, server: &WorldServer) -> Result<WorldReport, McpError> {
        let failed = |path: &Path| {
            let path = path.to_path_buf();
            move |source| McpError::Output { path, source }
        };
        if let Some(path) = &self.state {
            write_json_atomic(path, server.state()).map_err(failed(path))?;
        }
        let report = server.report();
        if let Some(path) = &self.report {
            write_json_atomic(path, &report).map_err(failed(path))?;
        }
        Ok(report)
    }

    /// Each output's fresh `.recovered` sibling.
    fn recovered(&self) -> Outputs {
        Outputs {
            state: self.state.as_deref().map(recovered_path),
            report: self.report.as_deref().map(recovered_path),
        }
    }
}

/// Starts the journal of a session that owes outputs (none when it owes nothing). The header
/// holds the spec as written (`spec_text`, read from `spec_path`), the seed and the outputs.
pub fn open_journal(
    outputs: &Outputs,
    spec_path: &Path,
    spec_text: &str,
    seed: u64,
) -> Result<Option<Journal>, McpError> {
    let Some(path) = outputs.journal_path() else {
        return Ok(None);
    };
    let header = json!({
        "spec_path": absolute(spec_path),
        "spec": spec_text,
        "seed": seed,
        "state_out": outputs.state.as_deref().map(absolute),
        "report": outputs.report.as_deref().map(absolute),
    });
    Journal::create(&path, JOURNAL_KIND, header).map(Some)
}

/// Serves `server` until the session ends (EOF, a signal, a client that went away) and says
/// why. Each `tools/call` is appended to `journal` (when given) before it is answered, so
/// every answered call can be replayed after a kill ([`recover`]).
pub fn serve<W: Write>(
    server: &mut WorldServer,
    inbox: &ServeInbox,
    output: W,
    mut journal: Option<&mut Journal>,
) -> Ending {
    serve_lines(inbox, output, |read| match read {
        LineRead::Line(line) => answer_journaled(server, &line, journal.as_deref_mut()),
        LineRead::TooLong(length) => vec![ReplayServer::line_too_long(length)],
    })
}

/// Handles one input line as [`WorldServer::handle_line`] does, and appends the call it made,
/// if any, to `journal` before the answer goes out.
pub fn answer_journaled(
    server: &mut WorldServer,
    line: &[u8],
    journal: Option<&mut Journal>,
) -> Vec<Value> {
    let calls_before = server.calls().len();
    let answers = server.handle_line(line);
    if let (Some(journal), Some(call)) = (journal, server.calls().get(calls_before)) {
        note_call(journal, call, line);
    }
    answers
}

/// Appends one answered call: its record and the request line that made it.
fn note_call(journal: &mut Journal, call: &CallRecord, line: &[u8]) {
    let request: Value = serde_json::from_slice(line).expect("a line that made a call is JSON");
    if let Err(e) = journal.append(&json!({"call": call, "request": request})) {
        eprintln!("simtape mcp world: {e}; a kill from now on may lose calls");
    }
}

/// Ends a session: writes the outputs from the live server, then deletes the journal.
pub fn finish(
    server: &WorldServer,
    outputs: &Outputs,
    journal: Option<Journal>,
) -> Result<WorldReport, McpError> {
    let report = outputs.write(server)?;
    if let Some(journal) = journal {
        journal::remove(&journal.close())?;
    }
    Ok(report)
}

/// Outputs rebuilt from a journal.
#[derive(Debug, Clone)]
pub struct Recovered {
    /// Where the state and report went.
    pub outputs: Outputs,
    /// The report written.
    pub report: WorldReport,
    /// Journal lines that could not be used (a kill mid-write cuts the last one short).
    pub skipped: Vec<String>,
}

/// Replays a journal that no running process holds, writes the outputs (each to the path in
/// `targets` when given, else where the journal says), and deletes the journal.
pub fn recover(journal_path: &Path, targets: &Outputs) -> Result<Recovered, McpError> {
    let contents = journal::read(journal_path, JOURNAL_KIND)?;
    let invalid = |reason: String| McpError::JournalInvalid {
        path: journal_path.into(),
        reason,
    };
    let header = &contents.header;
    let (Some(spec_text), Some(spec_path), Some(seed)) = (
        header["spec"].as_str(),
        header["spec_path"].as_str(),
        header["seed"].as_u64(),
    ) else {
        return Err(invalid("the header lacks the spec or the seed".into()));
    };
    let world = World::parse(spec_text, Path::new(spec_path))
        .map_err(|e| invalid(format!("the spec in the header: {e}")))?;
    let mut server = WorldServer::new(world, seed);
    let mut skipped = contents.skipped;
    for (index, entry) in contents.entries.iter().enumerate() {
        let recorded = serde_json::from_value::<CallRecord>(entry["call"].clone());
        let (Ok(recorded), Some(request)) = (recorded, entry.get("request")) else {
            skipped.push(format!("entry {}: not a world call", index + 1));
            continue;
        };
        server.handle_line(request.to_string().as_bytes());
        if server.calls().last() != Some(&recorded) {
            return Err(invalid(format!(
                "call {} replays differently than it was served",
                recorded.call
            )));
        }
    }
    let from_header = |key: &str| header[key].as_str().map(PathBuf::from);
    let outputs = Outputs {
        state: targets.state.clone().or_else(|| from_header("state_out")),
        report: targets.report.clone().or_else(|| from_header("report")),
    };
    let report = outputs.write(&server)?;
    journal::remove(journal_path)?;
    Ok(Recovered {
        outputs,
        report,
        skipped,
    })
}

/// At the start of a session: when a killed server left a journal for these outputs, rebuilds
/// its outputs beside them (`R.recovered.json`, see [`recovered_path`]) so nothing is lost.
pub fn recover_left(outputs: &Outputs) -> Result<Option<Recovered>, McpError> {
    let Some(path) = outputs.journal_path() else {
        return Ok(None);
    };
    if !journal::is_left(&path)? {
        return Ok(None);
    }
    recover(&path, &outputs.recovered()).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_left_journal_rebuilds_the_same_state_and_report() {
        // Goal: replaying the journal of a session gives the outputs the session would have
        // written itself.
        let dir = crate::mcp_stdio::files::test_dir("world-outputs");
        let spec = r#"{"name":"w","initial_state":{"n":1},"goal":{"assertions":[{"path":"/n","equals":2}]},
            "tools":[{"name":"set","inputSchema":{"type":"object","properties":{"v":{"type":"integer"}}},"effects":[{"op":"set","path":"/n","value":"{{v}}"}]}]}"#;
        let world = World::parse(spec, Path::new("w.json")).unwrap();
        let outputs = Outputs {
            state: Some(dir.join("state.json")),
            report: Some(dir.join("report.json")),
        };
        let mut journal = open_journal(&outputs, Path::new("w.json"), spec, 7)
            .unwrap()
            .unwrap();
        let mut server = WorldServer::new(world, 7);
        let inbox = ServeInbox::from_bytes(
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"set","arguments":{"v":2}}}
{"jsonrpc":"2.0","id":2,"method":"tools/list"}
"#,
        );
        serve(&mut server, &inbox, Vec::new(), Some(&mut journal));
        let expected = server.report();
        let journal_path = journal.close();
        let recovered = recover(&journal_path, &Outputs::default()).unwrap();
        assert_eq!(recovered.report, expected);
        assert!(recovered.report.scored.passed);
        assert!(!journal_path.exists(), "the journal is gone");
        let state: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("state.json")).unwrap())
                .unwrap();
        assert_eq!(state, json!({"n": 2}));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
