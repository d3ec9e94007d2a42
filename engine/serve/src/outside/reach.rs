//! Whether a provider answers at all, asked before a recording writes anything: a TCP
//! connection to its base URL's host and port, opened and closed.

use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

use simtape::cap::llm::{host_and_port, RecordError};

/// How long [`reachable`] waits for each of the host's addresses.
pub const REACH_TIMEOUT_MS: u64 = 5_000;

/// Why a provider is unreachable; each message is a sentence to follow "unreachable: ".
/// Fatal to the recording, which writes nothing.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReachError {
    /// The base URL names no host and port.
    #[error(transparent)]
    BadUrl(#[from] RecordError),
    /// The host name does not resolve.
    #[error("{host}:{port} does not resolve: {source}")]
    Unresolved {
        /// The host.
        host: String,
        /// The port.
        port: u16,
        /// Why.
        source: std::io::Error,
    },
    /// The host name resolves to no address.
    #[error("{host}:{port} resolves to no address")]
    NoAddress {
        /// The host.
        host: String,
        /// The port.
        port: u16,
    },
    /// No address took a connection; the last one tried, and why.
    #[error("{host}:{port} ({address}): {source}")]
    Refused {
        /// The host.
        host: String,
        /// The port.
        port: u16,
        /// The last address tried.
        address: SocketAddr,
        /// Why it took no connection (refused, timed out).
        source: std::io::Error,
    },
}

/// Returns `Ok` when a TCP connection to `base_url`'s host and port opens within
/// [`REACH_TIMEOUT_MS`], else why not (a bad URL, a name that does not resolve, a refused or
/// timed-out connection). Nothing is sent.
pub fn reachable(base_url: &str) -> Result<(), ReachError> {
    let (host, port) = host_and_port(base_url)?;
    let addresses: Vec<_> = match (host.as_str(), port).to_socket_addrs() {
        Ok(addresses) => addresses.collect(),
        Err(source) => return Err(ReachError::Unresolved { host, port, source }),
    };
    let mut last = None;
    for address in addresses {
        match TcpStream::connect_timeout(&address, Duration::from_millis(REACH_TIMEOUT_MS)) {
            Ok(_) => return Ok(()),
            Err(source) => last = Some((address, source)),
        }
    }
    Err(match last {
        Some((address, source)) => ReachError::Refused {
            host,
            port,
            address,
            source,
        },
        None => ReachError::NoAddress { host, port },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unreachable_provider_is_named_with_its_reason() {
        // Goal: a bad URL and a closed port each say why, naming the host and port.
        assert!(matches!(reachable("not a url"), Err(ReachError::BadUrl(_))));
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
        let port = listener.local_addr().expect("bound").port();
        drop(listener);
        let error = reachable(&format!("http://127.0.0.1:{port}")).expect_err("closed");
        assert!(
            error
                .to_string()
                .starts_with(&format!("127.0.0.1:{port} (127.0.0.1:{port}): ")),
            "{error}"
        );
    }
}
