//! The CLI parses, renders and sets exit codes (docs/ARCHITECTURE.md): the threads, signal
//! handlers, sockets and processes of the outside world are the gateway's (`simtape-serve`),
//! so none of them is written in the CLI's code. Counted from the source, outside unit tests.

use super::source_tree::{root, texts};

/// What only the gateway does: start a thread, handle a signal, open a socket, start or pause
/// a process.
const GATEWAY_ONLY: [&str; 9] = [
    "thread::spawn",
    "thread::sleep",
    "signal_hook",
    "ctrlc",
    "TcpListener",
    "TcpStream",
    "UdpSocket",
    "process::Command",
    "UnixListener",
];

/// The gateway-only uses in `text` before its unit tests, as `(line, what)`.
fn gateway_uses(text: &str) -> Vec<(usize, &'static str)> {
    let mut found = Vec::new();
    for (number, line) in text.lines().enumerate() {
        if line.starts_with("#[cfg(test)]") {
            break;
        }
        if line.trim_start().starts_with("//") {
            continue;
        }
        found.extend(
            GATEWAY_ONLY
                .iter()
                .filter(|what| line.contains(*what))
                .map(|what| (number + 1, *what)),
        );
    }
    found
}

#[test]
fn the_cli_starts_no_thread_handles_no_signal_and_opens_no_socket() {
    let mut uses = Vec::new();
    for (shown, text) in texts(&root().join("engine/cli/src")) {
        uses.extend(
            gateway_uses(&text)
                .into_iter()
                .map(|(line, what)| format!("{shown}:{line}: {what}")),
        );
    }
    assert!(
        uses.is_empty(),
        "the CLI does what the gateway owns (move it to simtape-serve):\n{}",
        uses.join("\n")
    );
}

#[test]
fn a_thread_in_the_cli_would_be_found() {
    let text = "fn f() {\n    // thread::spawn in a comment\n    std::thread::spawn(|| ());\n}\n#[cfg(test)]\nmod t { fn g() { std::thread::sleep(d); } }\n";
    assert_eq!(gateway_uses(text), [(3, "thread::spawn")]);
}
