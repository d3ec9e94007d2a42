//! simtape-eval: what the runs of an eval decided, as data. The library decides; the command
//! line only renders.
//!
//! A run of an eval scenario (the harness is `simtape-agent`) ends in a [`Verdict`]: pass,
//! fail with the verifier that did not hold, or error with what stopped the run. Its seed,
//! virtual time, counts, fingerprint and tape are the core's [`simtape::RunSummary`]. Many
//! runs of one scenario (a seed sweep, or n final states of an MCP world) are scored with the
//! exact, unbiased estimators pass@k and pass^k ([`estimate`]). A seed sweep's results are the
//! `simtape-sweep/1` report ([`sweep`]): one record per (scenario, seed), a summary per
//! scenario, the merge of shard reports into the report one machine would write, and its
//! renderings (JSON, JSON lines, JUnit XML, CSV, the text summary). [`run_json`] holds what
//! `simtape run --json` prints and the evidence's verdict file.
//!
//! ```
//! use simtape_eval::estimate::pass_at_k;
//! use simtape_eval::Verdict;
//! assert_eq!(Verdict::Pass.label(), "pass");
//! // 2 of 4 seeds passed: the chance that at least one of 2 trials passes is 5/6.
//! assert_eq!(pass_at_k(4, 2, 2).to_string(), "5/6");
//! ```
//!
//! Module map:
//! - `verdict` — [`Verdict`], [`VerdictKind`], [`VerifierResult`].
//! - [`estimate`] — exact fractions, binomials, pass@k and pass^k, [`estimate::KRow`].
//! - [`sweep`] — the `simtape-sweep/1` report: seed ranges and shards, records, summaries,
//!   failure clusters, the merge, the renderings, and the diff of two reports.
//! - [`paired`] — the exact sign (McNemar) test on the seeds two sweeps both ran.
//! - [`failures`] — the failure database a sweep keeps under `--out`: one entry per failure
//!   cluster, replayed first by the next sweep or `simtape ci`.
//! - [`run_json`] — the JSON of one run (`simtape run --json`, `verdict.json`).
//! - [`evidence`] — the run-and-test evidence contract: `GATES.json`, plan, tests,
//!   artifacts, and the normalizer of the run log.
//! - [`property`] — `always` / `sometimes` / `reachable` / `unreachable`: one run's results
//!   and their tally over a sweep.
//! - [`explain`] — the curve of a failure's inevitability over a run, from forks.
//! - [`shrink`] — the search for the fewest, simplest decisions a failure needs.
//! - [`decisions`] — decisions files: the overrides a run takes and the decisions it took.
//! - [`reproduce`] — the command lines simtape prints to paste: shell quoting, the
//!   `simtape run` line of a seed.
//! - [`recording`] — `simtape record`: the loosened fixture of a recording and the snapshot of
//!   the project the program ran in.
//! - [`harness`] — a `[harness]` run's outcome, and a sweep's summary of many.
//! - [`view`] — seeing a run: a tape as a timeline, written as a Perfetto trace, an HTML page
//!   (a tape, a diff, a sweep report) or a terminal tree.
//! - [`world_eval`] — `simtape mcp eval`: pass@k and pass^k over the final states of an MCP
//!   world (`simtape-mcp` scores each).
//!
//! Every rendering is a pure function of its data, so equal reports give equal bytes.

#![warn(missing_docs)]

pub mod branch;
pub mod decisions;
pub mod estimate;
pub mod evidence;
pub mod explain;
pub mod explore;
pub mod failures;
pub mod harness;
pub mod paired;
pub mod property;
pub mod recording;
pub mod reproduce;
pub mod run_json;
pub mod shrink;
pub mod sweep;
mod verdict;
pub mod view;
pub mod world_eval;

pub use verdict::{Verdict, VerdictKind, VerifierResult, NO_VERIFIER, NO_VERIFIER_SAW};
