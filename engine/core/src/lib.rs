//! simtape: a deterministic discrete-event simulation engine for testing LLM-agent pipelines.
//!
//! A [`Sim`] runs a pipeline (an async closure) on one thread, in **virtual time**, with a
//! **seeded RNG**. Everything the pipeline does outside itself goes through an **actor**
//! ([`actor`]), which answers after a virtual latency it decides. Every spawn, wake, request
//! and reply becomes a record of the run's **tape** ([`tape`]): same seed, same inputs, same
//! bytes. The **oracle** ([`oracle`]) diffs two tapes and names the first divergence.
//!
//! ```
//! use std::time::Duration;
//! let mut builder = simtape::Sim::builder();
//! builder.seed(7).tape_in_memory();
//! let report = builder.build().unwrap().run(|host| async move {
//!     let a = host.spawn("a", async { simtape::time::sleep(Duration::from_millis(300)).await; 'a' });
//!     let b = host.spawn("b", async { simtape::time::sleep(Duration::from_millis(100)).await; 'b' });
//!     host.event("started", serde_json::json!({"tasks": 2})).await;
//!     (a.await.unwrap(), b.await.unwrap(), host.now_ns())
//! }).unwrap();
//! assert_eq!(report.output, ('a', 'b', 300_000_000)); // the sleeps overlap
//! ```
//!
//! Module map:
//! - [`sim`] — `Sim` and `Builder` (seed, start instant, limits, tape, actors), `Host`.
//! - [`run`] — open runs: `Sim::start` → `Run` (`step`, `run_until`, `deliver`, `finish`).
//! - [`inbox`] — `Inbox`/`Outbox`: input into and output from an open run.
//! - [`RunSummary`] — what every report of a run says about it (seed, time, counts, tape).
//! - `executor` — the run loop (entered through a guard), tasks, join handles, deadlocks.
//! - [`time`] — virtual time, `sleep`, `sleep_until`, `timeout`, `interval`.
//! - `timers` — the `(t_ns, seq)` timer queue.
//! - [`sync`] — channels.
//! - [`rng`] — per-actor ChaCha streams, integer `Ratio`s.
//! - [`actor`] — the actor seam; the clock and user-event actors.
//! - [`cap`] — the capabilities: filesystem overlay, network policy, LLM, processes, the
//!   WASI sandbox, and the one fault engine they (and MCP worlds) share. What reaches the
//!   outside world (record mode's HTTP client, real program runs) is behind seams the gateway
//!   crate, `simtape-serve`, implements: the core holds no HTTP client and starts no process.
//! - [`capabilities`] — the capability registry, builder settings and host handles.
//! - [`limits`] — every bound of a run.
//! - `recorder` — records to the tape and the run fingerprint.
//! - [`tape`] — the tape format v3, writer and reader.
//! - [`oracle`] — tape diffs.
//! - [`json_diff`] — where two JSON documents differ, by JSON pointer.
//! - [`scenario`] — the TOML scenario format: its span-keeping decoder and its interpreter.
//! - [`error`] — what ends a run.
//! - [`testing`] — seed sweeps for `cargo test`, with the replay command on failure; the
//!   attribute [`test`] (feature `macros`, on by default) makes one `#[test]` of a sweep.

#![warn(missing_docs)]

pub mod actor;
pub mod buggify;
pub mod cap;
pub mod capabilities;
pub mod decision;
pub mod error;
mod executor;
pub mod inbox;
pub mod input;
pub mod json_diff;
pub mod limits;
pub mod oracle;
mod prefetch;
pub mod property;
mod recorder;
pub mod rng;
pub mod run;
pub mod scenario;
pub mod sim;
mod summary;
pub mod sync;
pub mod tape;
pub mod testing;
pub mod time;
mod timers;

pub use actor::{CLOCK_ACTOR, ENGINE_ACTOR};
pub use capabilities::Capabilities;
pub use error::{SimError, WaitingTask};
pub use executor::{in_simulation, spawn, JoinError, JoinHandle};
pub use run::{Progress, Run};
pub use sim::{ActorStates, Builder, Host, RunError, RunReport, Sim};
#[cfg(feature = "macros")]
pub use simtape_macros::test;
pub use summary::RunSummary;

/// The README's Rust example, compiled and run as a doctest so it cannot go stale.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct ReadmeDoctests;

/// docs/testing.md's Rust examples, compiled and run as doctests (its shown output is checked
/// by `engine/macros/tests/fresh_crate.rs`).
#[cfg(doctest)]
#[doc = include_str!("../../../docs/testing.md")]
struct TestingDoctests;
