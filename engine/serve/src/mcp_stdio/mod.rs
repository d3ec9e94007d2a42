//! The stdio MCP commands' I/O (`simtape mcp record|replay|verify|world`): everything around
//! `simtape-mcp`'s pure servers that touches the outside world. Threads, child processes, the
//! wall clock and files live here, in the gateway, so `simtape-mcp` stays pure.
//!
//! - [`stdio`] — the reader thread and the one way a stdio session ends (EOF or a signal).
//! - [`serve`] — the replay loop: lines in, a `ReplayServer`'s answers out.
//! - [`world`] — the world loop and what `simtape mcp world` owes: final state and report,
//!   the journal of each call, the rebuild from a journal a killed server left.
//! - [`record`] — the recording proxy around a child process.
//! - [`live`] — a client session against a live server (`simtape mcp verify`).
//! - [`journal`] — what a long-lived command owes, appended as it passes, so a kill loses
//!   nothing.
//! - [`files`] — atomic output writes (cassettes, states, reports).

pub mod files;
pub mod journal;
pub mod live;
pub mod record;
pub mod serve;
pub mod stdio;
pub mod world;
