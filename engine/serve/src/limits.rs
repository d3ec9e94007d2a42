//! Every limit of the outside of a simulation run with a real agent, in one place: what a
//! request, an agent's output, its working directory and its processes may take, and how
//! long they may take it. (The simulation's own limits are the core's `simtape::Limits`.)

use std::time::Duration;

/// The largest request body the gateway reads (Claude Code's requests are ~50 KB).
pub const REQUEST_BYTES_MAX: usize = 32 << 20;
/// The request bodies one session holds at once, from their first byte until they are
/// answered: one body of the largest size, or hundreds of an agent's usual ones. A body that
/// does not fit beside the others is refused with 503 and `retry-after`. Each held byte costs
/// about four more while the request is decoded and run (the text, its JSON, the model
/// request, the tape record): 8 bodies of 30 MB at once took the process to 1.09 GB without
/// the budget.
pub const REQUEST_BODIES_BYTES_MAX: usize = 40 << 20;
/// How long a connection may take to send a request's headers; an idle keep-alive
/// connection is waiting to send them, so it is closed after this long too (clients' own
/// pools let theirs go sooner: 5 s for httpx, 4 s for Node's undici).
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a request's whole body may take to arrive (loopback carries 32 MiB in well
/// under a second); past it the request is answered 408 and its connection closed.
pub const BODY_READ_TIMEOUT: Duration = Duration::from_secs(60);

/// Bytes of one line of the agent's stdout read; a longer line is cut there.
pub const LINE_BYTES_MAX: usize = 4 << 20;
/// Characters of a tool's output or a message an event keeps (the rest is cut, marked `…`).
pub const EVENT_TEXT_CHARS_MAX: usize = 4096;
/// Events one agent session may give; past it they are dropped and one error event says so.
pub const EVENTS_MAX: usize = 100_000;
/// Bytes of the agent's stderr kept (the rest is counted).
pub const STDERR_BYTES_MAX: usize = 64 * 1024;
/// Bytes of the end of the agent's stderr kept for the lines a FAIL reason shows.
pub const STDERR_TAIL_BYTES: usize = 8 * 1024;
/// Lines of the end of the agent's stderr a FAIL reason shows.
pub const STDERR_TAIL_LINES: usize = 10;
/// Characters of each of those lines.
pub const STDERR_TAIL_LINE_CHARS: usize = 240;

/// Bytes of one file of the working directory the comparison reads; a larger file is
/// named, not compared.
pub const FILE_BYTES_MAX: u64 = 16 << 20;
/// Entries the scratch working directory may hold, copied or compared.
pub const ENTRIES_MAX: usize = 100_000;

/// How long a process group has between SIGTERM and SIGKILL.
pub const KILL_GRACE: Duration = Duration::from_secs(2);
/// How long one `gate` verifier's program may run.
pub const GATE_TIMEOUT: Duration = Duration::from_secs(300);
/// How long the agent's output may go on after it ended (a grandchild holding its stdout).
pub const OUTPUT_DRAIN: Duration = Duration::from_secs(5);

/// Bytes the sandbox's root file system may hold: its `/tmp`, its `HOME`, the project's
/// changes (the overlay's upper layer) and anything else a program writes.
pub const SANDBOX_ROOT_BYTES: u64 = 1 << 30;
/// Files and directories the sandbox's root file system may hold.
pub const SANDBOX_ROOT_INODES: u64 = 200_000;
/// How long setting a sandbox up may take before it is an error.
pub const SANDBOX_SETUP_TIMEOUT: Duration = Duration::from_secs(10);
/// Lookups and connection attempts one sandbox records; past it they are counted only.
pub const SANDBOX_ATTEMPTS_MAX: usize = 10_000;
/// How long dialling a host the `[network]` policy allows may take.
pub const SANDBOX_DIAL_TIMEOUT: Duration = Duration::from_secs(10);

/// How long past the settle window the driver waits for a busy agent (one of its threads
/// running or in uninterruptible I/O) to block before it takes the batch as it is.
pub const SETTLE_BUSY_MAX: Duration = Duration::from_secs(10);

/// How often the driver looks again at a busy agent.
pub const SETTLE_BUSY_POLL: Duration = Duration::from_millis(10);

/// The most processes of a sandbox looked at to tell whether its agent is busy.
pub const BUSY_PROCESSES_MAX: usize = 4096;
