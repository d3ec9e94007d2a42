//! Whether a provider answers at all, asked before a recording writes anything: a TCP
//! connection to its base URL's host and port, opened and closed.

use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use simtape::cap::llm::host_and_port;

/// How long [`reachable`] waits for each of the host's addresses.
pub const REACH_TIMEOUT_MS: u64 = 5_000;

/// Returns `Ok` when a TCP connection to `base_url`'s host and port opens within
/// [`REACH_TIMEOUT_MS`], else why not (a bad URL, a name that does not resolve, a refused or
/// timed-out connection), as a sentence. Nothing is sent.
pub fn reachable(base_url: &str) -> Result<(), String> {
    let (host, port) = host_and_port(base_url).map_err(|e| e.to_string())?;
    let addresses: Vec<_> = (host.as_str(), port)
        .to_socket_addrs()
        .map_err(|e| format!("{host}:{port} does not resolve: {e}"))?
        .collect();
    let mut last = format!("{host}:{port} resolves to no address");
    for address in addresses {
        match TcpStream::connect_timeout(&address, Duration::from_millis(REACH_TIMEOUT_MS)) {
            Ok(_) => return Ok(()),
            Err(e) => last = format!("{host}:{port} ({address}): {e}"),
        }
    }
    Err(last)
}
