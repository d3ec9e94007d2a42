//! What tells a long-lived simtape process to stop, and the signals it passes on: the
//! process's signals are the outside, so their handlers and the threads that wait on them
//! live here; the command line only says what to print.
//!
//! * [`end_session_on_signals`]: SIGTERM, SIGINT and SIGHUP end a stdio MCP session like
//!   stdin EOF; SIGPIPE becomes a write error there;
//! * [`pass_on`]: `mcp record` hands the signal it got to the server it proxies;
//! * [`stop_on_ctrl_c`] (a sweep's flag) and [`on_ctrl_c`] (serve's stop);
//! * [`stop_on_end`]: an HTTP MCP server stopped when its session's inbox ends;
//! * [`agent_exits_from_stdin`]: an in-process agent's `exit CODE` line on standard input.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};

use simtape_agent::AgentExit;

use crate::mcp_stdio::stdio::{Ending, Event, ServeInbox};

/// Starts the thread on which SIGTERM, SIGINT and SIGHUP end `inbox`'s session as stdin EOF
/// does (the serving loop then writes what it owes). SIGPIPE gets a handler too, so writing
/// to a client that went away fails (and ends the session) instead of killing the process
/// before its files are written.
#[cfg(unix)]
pub fn end_session_on_signals(inbox: &ServeInbox) -> io::Result<()> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGPIPE, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGTERM, SIGINT, SIGHUP])?;
    signal_hook::flag::register(SIGPIPE, Default::default())?;
    let stopper = inbox.stopper();
    std::thread::spawn(move || {
        for signal in signals.forever() {
            stopper.stop(Ending::Signal(signal));
        }
    });
    Ok(())
}

/// Elsewhere only stdin EOF ends a session.
#[cfg(not(unix))]
pub fn end_session_on_signals(_: &ServeInbox) -> io::Result<()> {
    Ok(())
}

/// Passes the termination signal `signal` on to the process `pid` (the server `mcp record`
/// proxies).
#[cfg(unix)]
pub fn pass_on(pid: u32, signal: i32) -> io::Result<()> {
    use nix::sys::signal::{kill, Signal};
    let signal = Signal::try_from(signal).map_err(io::Error::from)?;
    let pid = i32::try_from(pid).map_err(io::Error::other)?;
    kill(nix::unistd::Pid::from_raw(pid), signal).map_err(io::Error::from)
}

/// Elsewhere no signal is passed on.
#[cfg(not(unix))]
pub fn pass_on(_: u32, _: i32) -> io::Result<()> {
    Err(io::ErrorKind::Unsupported.into())
}

/// Returns the flag the first Ctrl-C sets (after calling `on_first`, which says what
/// happens next); a second Ctrl-C exits at once (130, the shell's code for SIGINT). An error
/// when a handler is already set: Ctrl-C then keeps its default effect.
pub fn stop_on_ctrl_c(
    on_first: impl Fn() + Send + 'static,
) -> Result<&'static AtomicBool, ctrlc::Error> {
    static STOP: AtomicBool = AtomicBool::new(false);
    ctrlc::set_handler(move || {
        if STOP.swap(true, Ordering::SeqCst) {
            std::process::exit(130);
        }
        on_first();
    })?;
    Ok(&STOP)
}

/// Calls `stop` on every Ctrl-C.
pub fn on_ctrl_c(stop: impl FnMut() + Send + 'static) -> Result<(), ctrlc::Error> {
    ctrlc::set_handler(stop)
}

/// Starts the thread that waits for `inbox`'s session to end (a signal, stdin's end), then
/// sends the ending on the returned channel and `()` on `stop` (what stops an HTTP server).
pub fn stop_on_end(
    inbox: ServeInbox,
    stop: smol::channel::Sender<()>,
) -> std::sync::mpsc::Receiver<Ending> {
    let (ended_tx, ended_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || loop {
        if let Event::End(ending) = inbox.next() {
            let _ = ended_tx.send(ending);
            let _ = stop.send_blocking(());
            return;
        }
    });
    ended_rx
}

/// Starts the thread that reads an in-process agent's end from standard input: the first
/// line `exit CODE` is its exit; any other line goes to `ignored` (the first 80 characters);
/// stdin closing first ends it as by a signal. Lines are read through the capped reader
/// (`process::read_lines`): a line past its cap is cut, never held whole.
pub fn agent_exits_from_stdin(
    ignored: impl Fn(&str) + Send + 'static,
) -> smol::channel::Receiver<AgentExit> {
    let (tx, rx) = smol::channel::bounded(1);
    std::thread::spawn(move || {
        let mut exited = false;
        let stdin = smol::Unblock::new(std::io::stdin());
        smol::block_on(crate::process::read_lines(stdin, |line| {
            if exited {
                return;
            }
            let code = line.trim().strip_prefix("exit ").map(str::trim);
            match code.and_then(|code| code.parse::<i32>().ok()) {
                Some(code) => {
                    exited = true;
                    let _ = tx.send_blocking(AgentExit::Exited(code));
                }
                None => {
                    let shown: String = line.chars().take(80).collect();
                    ignored(&shown);
                }
            }
        }));
        if !exited {
            let _ = tx.send_blocking(AgentExit::Signaled);
        }
    });
    rx
}
