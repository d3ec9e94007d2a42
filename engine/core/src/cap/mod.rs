//! The capabilities: each is an actor (see [`crate::actor`]) with its own module.
//!
//! - [`fs`] — a copy-on-write overlay over a real directory, with a diff and seeded faults.
//! - [`net`] — the network policy: deny by default, allow-list by host, suffix, IP, CIDR, port.
//! - [`llm`] — model calls replayed from fixtures, matched by request content.
//! - [`process`] — subprocesses per program: real, recorded into a process tape, replayed, or
//!   run as WASI guests.
//! - [`fault_rules`] — the `[faults]` rules of the llm, fs and process actors: their types,
//!   call counts and draws.
//! - [`wasi`] — the WASI sandbox: wasm32-wasip1 modules on the simulation's clock, RNG and
//!   overlay (the engine itself needs the `wasi` feature).

pub mod fault_rules;
pub mod fs;
pub mod llm;
pub mod net;
pub mod process;
pub mod wasi;
