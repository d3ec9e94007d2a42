//! The simulated world behind `simtape mcp world` and `simtape mcp eval`.
//!
//! A world spec ([`spec::WorldSpec`], a JSON file) describes a small stateful service: an
//! initial state (one JSON document), tools with JSON Schemas whose effects are JSON-pointer
//! operations on that state, faults to inject, and a goal. The pieces, in the order a call
//! flows through them:
//!
//! * [`spec`] parses and checks a spec, naming what is wrong and where (line and column for
//!   JSON errors, a JSON pointer into the spec for everything else).
//! * [`mod@pointer`] is JSON-pointer plumbing: parse, escape, and the path patterns (`*`, `**`)
//!   that say which changes a goal allows.
//! * [`template`] substitutes `{{arg}}` placeholders from the call arguments.
//! * [`effects`] applies a tool's operations (read, set, merge, append, delete, add, subtract)
//!   to a copy of the state, so a failing call changes nothing.
//! * [`faults`] says what each fault kind does; whether one fires on a call (by call number or
//!   a seeded integer-ratio rate) is the core's one fault engine, `simtape::cap::fault_rules`.
//! * [`server::WorldServer`] is the pure dual-era MCP server: one line in, messages out.
//! * [`mod@score`] checks a final state against the goal and lists collateral damage; the world
//!   report and `eval` both use it.
//!
//! What `simtape mcp world` owes on disk (final state, report, the journal of each call, the
//! rebuild from a journal a killed server left) is the gateway's: `simtape-serve`'s
//! `mcp_stdio::world`.
//!
//! The same [`WorldServer`] answers inside a simulation, behind the world-backed
//! [`crate::actor::McpActor`]; there the spec's `latency` models each answer's virtual time.

pub mod effects;
pub mod faults;
pub mod pointer;
pub mod score;
pub mod server;
pub mod spec;
pub mod template;

pub use score::{score, Scored};
pub use server::WorldServer;
pub use spec::{LatencySpec, SpecError, World, WorldSpec};
