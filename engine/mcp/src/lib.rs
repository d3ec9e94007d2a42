//! MCP (Model Context Protocol) cassettes for simtape: record a real stdio MCP server, replay
//! the recording as a stdio server, and report drift between a recording and a server.
//!
//! The story, in the order a reader needs it:
//!
//! * A stdio MCP conversation is newline-delimited JSON-RPC 2.0 ([`jsonrpc`]), read with a hard
//!   line-length cap ([`lines`], [`limits`]).
//! * The protocol has two eras ([`era`]): the handshake era (`initialize`, 2025-11-25 and
//!   before) and the stateless 2026-07-28 revision (per-request `_meta`, `server/discover`).
//! * A [`cassette::Cassette`] stores every message of a recorded conversation, both directions,
//!   in order, as raw `serde_json::Value`s, so no field a server sends is ever lost.
//!   [`redact`] scrubs secrets before a cassette is written.
//! * [`matching`] finds the recorded exchange that answers a live request, ignoring ids and
//!   per-request envelope keys, and names the closest one when nothing matches.
//! * [`replay::ReplayServer`] is a pure, dual-era MCP server over a cassette: bytes of one line
//!   in, JSON-RPC messages out.
//! * [`drift`] compares two cassettes (or a cassette and a live session) and reports tools
//!   added or removed, schema and annotation changes, changed results, new errors and latency.
//! * [`world`] serves a seeded simulated world (state, tools with JSON Schemas, effects as
//!   JSON-pointer operations, faults, a goal) and reports goal match and collateral damage;
//!   `simtape-eval`'s `world_eval` scores many final states with pass rate, pass@k and
//!   pass^k (it sits above this crate).
//! * [`actor::McpActor`] answers `tools/list` and `tools/call` from a cassette or a seeded world
//!   inside a simtape simulation, in virtual time; pipelines call it through
//!   [`actor::McpHandle`]; [`from_tape`] turns the calls on a run's tape back into a
//!   cassette per server.
//!
//! Everything here is pure (no clocks, no threads, no processes, no sockets; the core's ban
//! list applies, `clippy.toml`). The I/O of the stdio commands is the gateway's
//! (`simtape-serve`, module `mcp_stdio`): the reader thread and the one way a stdio session
//! ends, the replay and world loops, the recording proxy around a child process, a client
//! session against a live server (for `verify`), the journals that survive a kill, and
//! atomic output writes.

#![warn(missing_docs)]

pub mod actor;
pub mod asks;
pub mod cassette;
pub mod drift;
pub mod era;
pub mod error;
pub mod from_tape;
pub mod http;
pub mod jsonrpc;
pub mod limits;
pub mod lines;
pub mod matching;
pub mod redact;
pub mod replay;
pub mod script;
pub mod world;

pub use cassette::{Cassette, CassetteEntry, Exchange, Party};
pub use drift::{compare, DriftOptions, DriftReport, Finding};
pub use error::McpError;
pub use redact::Redactor;
pub use replay::ReplayServer;
