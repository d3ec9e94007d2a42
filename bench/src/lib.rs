//! simtape-bench: simtape side by side with tokio and nexosim on the reference workloads
//! (W1, W1ms, W2, W3, W4).
//!
//! - [`workloads`]: W1, W1ms, W2, W3 and W4, their SplitMix64 durations and expected figures.
//! - [`frameworks`]: each workload written in each framework's idiom.
//! - [`runner`]: interleaved rounds, medians, and the checks that every run did the work.
//! - [`report`]: the table, its JSON, and the performance bars.
//! - [`scenario`]: the reference eval scenario: runs per second, and a sweep on 1 and 2 threads.
//! - [`explore`]: runs to a rare failure: uniform seeds, swarm runs, guided exploration.
//! - [`serve`]: `simtape serve`'s round trip for a 50 KB request, JSON and SSE, beside aimock.
//! - [`claude_code`]: Claude Code's runs per minute under simtape (in its sandbox and on the
//!   host) and against a bare mock.
//! - [`sandbox`]: the agent sandbox's cost on a trivial program.
//! - [`wasi`]: the WASI sandbox: a cached 24 h sleeper guest per run, and its fuel.
//! - [`scale`]: what the scale bars share (peak memory, PASS/MISS).
//!
//! ```
//! use simtape_bench::frameworks::Framework;
//! use simtape_bench::workloads::{Size, Workload};
//! let shape = Workload::W3.shape(Size::Small);
//! let outcome = Framework::Simtape.run(shape, std::path::Path::new("unused.tape"));
//! assert_eq!(outcome.events, shape.expected(1).events);
//! ```

#![warn(missing_docs)]

pub mod claude_code;
pub mod explore;
pub mod frameworks;
pub mod report;
pub mod runner;
pub mod sandbox;
pub mod scale;
pub mod scenario;
pub mod serve;
pub mod wasi;
pub mod workloads;
