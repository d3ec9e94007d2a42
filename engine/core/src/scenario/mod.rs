//! The TOML scenario format and its interpreter: drive the engine without writing Rust.
//!
//! A scenario file names a run (`[scenario]`), may bound it (`[limits]`), may give it a
//! filesystem overlay (`[fs]`), a network policy (`[network]`), a replayed model (`[llm]`)
//! and subprocesses (`[process]`), and lists tasks (`[[task]]`) whose steps sleep, sleep a
//! seeded random time, log events, talk over named channels, call the capabilities and
//! declare outcomes. `[faults]` fails chosen llm, fs and process calls. An eval scenario adds
//! the agent under test (`[agent]`), its MCP servers (`[[mcp]]`, with `[[faults.mcp]]`) and
//! verifiers (`[[verify]]`): the `simtape-agent` crate decodes those through this module's
//! [`Extension`] hook, with the same decoder, and runs them. The reference is
//! `docs/scenario-format.md`.
//!
//! ```
//! use std::path::Path;
//! use simtape::scenario::Scenario;
//!
//! let source = r#"
//! [scenario]
//! name = "ping"
//! seeds = [7]
//!
//! [[task]]
//! name = "pinger"
//! steps = [{ sleep = "250ms" }, { send = "pings", value = "ping" }]
//!
//! [[task]]
//! name = "ponger"
//! steps = [{ recv = "pings" }, { outcome = "ponged", value = true }]
//! "#;
//! let scenario = Scenario::parse(source, Path::new("ping.toml")).unwrap();
//! let mut builder = scenario.builder(scenario.seeds()[0]);
//! let report = scenario.run(&mut builder).unwrap();
//! assert_eq!(report.summary.end_ns, 250_000_000);
//! assert_eq!(report.outcomes, vec![("ponged".to_string(), serde_json::json!(true))]);
//! ```
//!
//! The pipeline is: `node` reads the TOML into a tree that keeps every span; `decode` turns
//! the tree into a checked `schema::Spec`, collecting every problem (with `fields` for single
//! values, `tables` for the capability tables, `faults_table` for `[faults]`, `steps` and
//! `cap_steps` for steps), and hands the tables it does not own to an [`Extension`];
//! `validate` checks across tasks (unique names, channels with both ends, a table for every
//! capability a step uses); `resources` opens the files the scenario references, relative to
//! the scenario file; `interpret` runs the spec, its channels living in `channels` and its
//! step failures in `failure`. `error` places problems at a line and column. [`decoder`]
//! gathers what an extension decodes with.

mod cap_steps;
mod channels;
mod decode;
mod error;
mod extension;
mod failure;
mod faults_table;
mod fields;
mod inputs;
mod interpret;
mod llm_record;
mod node;
mod resources;
mod schema;
mod steps;
mod tables;
mod validate;

use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use crate::cap::fault_rules::{
    FaultsSpec, FsFault, FsFaultKind, LlmFault, LlmFaultKind, ProcessFault, StreamFault,
    StreamMode, Trigger,
};
pub use error::ScenarioError;
pub use extension::{CoreOnly, Extension, Listed, Tables};
pub use failure::{CallError, ScenarioFailure, ScenarioRunError, StepError};
pub use inputs::{
    unpack, InputsError, Omissions, INPUTS_BYTES_MAX, INPUTS_ENTRIES_MAX, PROCESS_WASI_ENTRY,
};
pub use llm_record::LlmRecord;
pub use schema::name_problem;

use crate::cap::fs::FsDiff;
use crate::cap::llm::LlmActor;
use crate::input::InputProblem;
use crate::limits::{InputFile, Limits};
use crate::sim::{Builder, Host, RunError, Sim};
use crate::summary::RunSummary;
use crate::tape::ScenarioStamp;
use resources::Resources;
use schema::Spec;

/// What an [`Extension`] decodes with: the decoder and its value decoders, the field types,
/// and the shared pieces of the core's tables.
pub mod decoder {
    pub use super::cap_steps::fs_path;
    pub use super::decode::Decoder;
    pub use super::faults_table::{integer, required_text, retry_after, rule_array, text, trigger};
    pub use super::fields::{one_of, Field, Fields};
    pub use super::schema::{Capability, PathField};
    pub use super::tables::{path, ratio};
}

/// A checked scenario, ready to run at any seed, any number of times.
#[derive(Debug, Clone)]
pub struct Scenario {
    path: PathBuf,
    source: String,
    spec: Arc<Spec>,
    resources: Arc<Resources>,
    /// The files the extension's tables opened, as the scenario names them.
    extension_inputs: Vec<String>,
}

// A sweep shares one scenario between the threads of its pool.
const _: () = {
    const fn shareable<T: Send + Sync>() {}
    shareable::<Scenario>()
};

/// What a scenario run produced: the one results model of a run's scripted part
/// (`simtape-agent`'s `EvalReport` holds one beside the agent's verdict and verifiers).
#[derive(Debug)]
pub struct ScenarioReport {
    /// The seed, time, counts, fingerprint and tape of the run.
    pub summary: RunSummary,
    /// Every `outcome` step that ran, as `(name, value)`, in the order they ran.
    pub outcomes: Vec<(String, serde_json::Value)>,
    /// What the run changed in its overlay, when the scenario has `[fs]`.
    pub fs_diff: Option<FsDiff>,
}

impl Scenario {
    /// Reads and checks the scenario file at `path`; the error is the first problem (in
    /// source order). Files above 4 MiB are refused.
    pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
        Scenario::check_all(path).map_err(first)
    }

    /// Checks scenario text; `path` names it in errors and anchors the relative paths of
    /// `[fs] root`, `[llm] fixture` and `[process] tape` (they resolve against its directory,
    /// and are opened). The error is the first problem, in source order.
    ///
    /// ```
    /// use std::path::Path;
    /// let source = "[scenario]\nname = \"x\"\n[[task]]\nname = \"t\"\nsteps = [{ sleep = \"soon\" }]\n";
    /// let error = simtape::scenario::Scenario::parse(source, Path::new("x.toml")).unwrap_err();
    /// assert_eq!(
    ///     error.to_string(),
    ///     "x.toml:5:20: field `task[0].steps[0].sleep`: expected a duration like \"250ms\", found \"soon\"",
    /// );
    /// ```
    pub fn parse(source: &str, path: &Path) -> Result<Scenario, ScenarioError> {
        Scenario::check_source(source, path).map_err(first)
    }

    /// Reads and checks the scenario file at `path` and the files it references, reporting
    /// every problem it finds (for `simtape check`), in source order.
    pub fn check_all(path: &Path) -> Result<Scenario, Vec<ScenarioError>> {
        Scenario::check_all_with(path, &mut CoreOnly)
    }

    /// Like [`Scenario::check_all`], with `extension` decoding the tables the core does not
    /// own; its problems are reported with the core's, in source order.
    pub fn check_all_with(
        path: &Path,
        extension: &mut dyn Extension,
    ) -> Result<Scenario, Vec<ScenarioError>> {
        let source = read_source(path).map_err(|error| vec![error])?;
        Scenario::check_source_with(&source, path, extension)
    }

    /// Checks scenario text, reporting every problem it finds, in source order. Never panics,
    /// whatever the text. When the text itself is sound, the files it references are opened
    /// relative to the directory of `path`, and their problems are reported at the fields
    /// that name them.
    pub fn check_source(source: &str, path: &Path) -> Result<Scenario, Vec<ScenarioError>> {
        Scenario::check_source_with(source, path, &mut CoreOnly)
    }

    /// Like [`Scenario::check_source`], with `extension` decoding (and then opening) the
    /// tables the core does not own; every problem of both is reported, in source order.
    pub fn check_source_with(
        source: &str,
        path: &Path,
        extension: &mut dyn Extension,
    ) -> Result<Scenario, Vec<ScenarioError>> {
        let root = match node::parse(source) {
            Ok(root) => root,
            Err(error) => return Err(vec![syntax_error(&error, source, path)]),
        };
        let mut decoded = decode::decode(&root, source, extension);
        let mut problems = validate::check(&decoded);
        problems.append(&mut decoded.problems);
        if problems.is_empty() {
            let spec = decoded
                .spec
                .take()
                .expect("decoding without problems yields a spec");
            let base = path.parent().unwrap_or(Path::new(""));
            let opened = resources::open(&spec, base);
            extension.open(&mut decoded, base);
            problems.append(&mut decoded.problems);
            match opened {
                Ok(resources) if problems.is_empty() => {
                    return Ok(Scenario {
                        path: path.to_path_buf(),
                        source: source.to_string(),
                        spec: Arc::new(spec),
                        resources: Arc::new(resources),
                        extension_inputs: std::mem::take(&mut decoded.inputs),
                    })
                }
                Ok(_) => {}
                Err(found) => problems.extend(found),
            }
        }
        problems.sort_by_key(|problem| problem.span.start);
        Err(problems
            .into_iter()
            .map(|p| p.locate(source, path))
            .collect())
    }

    /// Returns the scenario's name (`[scenario] name`).
    pub fn name(&self) -> &str {
        &self.spec.name
    }

    /// Returns the scenario's description (empty when it has none).
    pub fn description(&self) -> &str {
        &self.spec.description
    }

    /// Returns the pinned seeds (`[scenario] seeds`, default `[0]`); never empty.
    pub fn seeds(&self) -> &[u64] {
        &self.spec.seeds
    }

    /// Returns the start instant, in nanoseconds since the Unix epoch.
    pub fn start_unix_ns(&self) -> i64 {
        self.spec.start_unix_ns
    }

    /// Returns the limits (`[limits]` over the defaults).
    pub fn limits(&self) -> &Limits {
        &self.spec.limits
    }

    /// Returns the path the scenario was loaded from (or named by, for [`Scenario::parse`]).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Returns the scenario source text.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Returns the hex SHA-256 of the source.
    pub fn digest(&self) -> String {
        crate::tape::sha256_hex(self.source.as_bytes())
    }

    /// Returns the stamp for the tape header: name, digest and the source itself, so a tape
    /// can be replayed on its own.
    pub fn stamp(&self) -> ScenarioStamp {
        ScenarioStamp {
            name: self.name().to_string(),
            digest: self.digest(),
            source: self.source.clone(),
        }
    }

    /// Returns the fault plan of the llm, fs and process actors (`[faults]`).
    pub fn faults(&self) -> &FaultsSpec {
        &self.spec.faults
    }

    /// Returns whether `[process]` puts some program (or its default) in `record` mode: its
    /// runs call real programs and need a process tape to write to
    /// ([`Builder::process_record_to`]).
    pub fn records_processes(&self) -> bool {
        self.resources
            .process
            .as_ref()
            .is_some_and(crate::cap::process::ProcessActor::records)
    }

    /// Returns the `[fs]` root directory, resolved against the scenario file's directory (an
    /// agent program outside the simulation works in a scratch copy of it).
    pub fn fs_root(&self) -> Option<std::path::PathBuf> {
        let fs = self.spec.fs.as_ref()?;
        let base = self.path().parent().unwrap_or(Path::new(""));
        Some(base.join(&fs.root.path))
    }

    /// Returns the `[llm] fixture` file, resolved against the scenario file's directory.
    pub fn llm_fixture(&self) -> Option<std::path::PathBuf> {
        let llm = self.spec.llm.as_ref()?;
        let base = self.path().parent().unwrap_or(Path::new(""));
        Some(base.join(&llm.fixture.path))
    }

    /// Returns the network policy (`[network]`), `None` when the scenario has none (then no
    /// connection can be made at all).
    pub fn network(&self) -> Option<&crate::cap::net::Network> {
        self.spec.network.as_ref()
    }

    /// Returns the `[fs]` root when `allow_outside = true` lets it lie outside the scenario
    /// file's directory tree and it does (`simtape check` says so).
    pub fn fs_root_outside(&self) -> Option<std::path::PathBuf> {
        let fs = self.spec.fs.as_ref().filter(|fs| fs.allow_outside)?;
        let base = self.path().parent().unwrap_or(Path::new(""));
        resources::root_outside(&fs.root.path, base)
    }

    /// Returns whether the scenario has a filesystem overlay (`[fs]`), so has an fs diff.
    pub fn has_fs(&self) -> bool {
        self.spec.fs.is_some()
    }

    /// Returns a builder set up for this scenario at `seed`: seed, start instant, limits,
    /// scenario stamp and the capabilities of `[fs]`, `[network]`, `[llm]` and `[process]`. Add a tape
    /// (`.tape(path)`, `.tape_in_memory()`) before [`Scenario::run`].
    pub fn builder(&self, seed: u64) -> Builder {
        self.builder_with_llm(seed, self.resources.llm.clone())
    }

    /// Like [`Scenario::builder`], with `llm` as the run's model instead of the `[llm]`
    /// fixture's (a record-mode actor, to record a real provider's answers into a fixture;
    /// `None`: no model). The actors' order is the same, so tapes line up.
    pub fn builder_with_llm(&self, seed: u64, llm: Option<LlmActor>) -> Builder {
        let mut builder = Sim::builder();
        builder
            .seed(seed)
            .start_unix_ns(self.spec.start_unix_ns)
            .limits(self.spec.limits.clone())
            .scenario(self.stamp());
        // Capabilities are registered in one fixed order, so the tape's actor table is the
        // same on every run.
        if let Some(fs) = &self.resources.fs {
            builder.fs(fs.clone());
        }
        if let Some(network) = &self.spec.network {
            builder.network(network.clone());
        }
        if let Some(llm) = llm {
            builder.llm(llm);
        }
        if let Some(process) = &self.resources.process {
            builder.process(process.clone());
        }
        builder
    }

    /// Returns the scripted `[[task]]`s as one future for `host`'s run: it spawns one task per
    /// `[[task]]` and resolves to the outcomes they declared, or to the first failed step.
    /// [`Scenario::run`] runs it as the whole pipeline; a harness (the agent loop) runs it
    /// beside its own work. A scenario without tasks resolves at once and records nothing.
    pub fn tasks(
        &self,
        host: Host,
    ) -> impl std::future::Future<Output = Result<Vec<(String, serde_json::Value)>, Box<StepError>>>
           + 'static {
        interpret::run(host, Arc::clone(&self.spec))
    }

    /// Builds a run from `builder` (usually from [`Scenario::builder`]) and runs the scenario.
    /// The tape's verdict is `ok`, or `error: <error>` when the run fails (a deadlock, a
    /// limit, a failed capability step).
    pub fn run(&self, builder: &mut Builder) -> Result<ScenarioReport, ScenarioRunError> {
        let seed = builder.seed_value();
        let fs = builder.capabilities.fs();
        let sim = builder.build().map_err(|error| ScenarioRunError {
            error: Box::new(ScenarioFailure::Sim(error)),
            summary: Box::new(RunSummary::unstarted(seed)),
            fs_diff: None,
        })?;
        let outcome = sim.run_with_verdict(
            |host| self.tasks(host),
            |outcome| match outcome {
                Ok(Ok(_)) => "ok".to_string(),
                Ok(Err(error)) => format!("error: {error}"),
                Err(error) => format!("error: {error}"),
            },
        );
        let mut report = match outcome {
            Ok(report) => report,
            Err(failure) => return Err(sim_failure(failure, fs)),
        };
        let fs_diff = match report.fs_diff() {
            None => None,
            Some(Ok(diff)) => Some(diff),
            Some(Err(error)) => {
                return Err(report_failure(report, ScenarioFailure::FsDiff(error), None))
            }
        };
        let outcomes = match std::mem::replace(&mut report.output, Ok(Vec::new())) {
            Ok(outcomes) => outcomes,
            Err(error) => {
                let fs_diff = fs_diff.map(Box::new);
                return Err(report_failure(
                    report,
                    ScenarioFailure::Step(*error),
                    fs_diff,
                ));
            }
        };
        Ok(ScenarioReport {
            summary: report.summary,
            outcomes,
            fs_diff,
        })
    }
}

/// The run's outcome: the outcomes, or the step that failed.
type RunOutput = Result<interpret::Outcomes, Box<StepError>>;

/// A run the engine stopped, with the fs diff up to that point.
fn sim_failure(
    failure: RunError,
    fs: Option<crate::actor::ActorRef<crate::cap::fs::FsActor>>,
) -> ScenarioRunError {
    let fs_diff = fs
        .and_then(|fs| failure.actors.get(fs))
        .and_then(|fs| fs.diff().ok())
        .map(Box::new);
    ScenarioRunError {
        error: Box::new(ScenarioFailure::Sim(*failure.error)),
        summary: failure.summary,
        fs_diff,
    }
}

/// A run that completed but failed: a step's error, or an fs diff that cannot be computed.
fn report_failure(
    report: crate::sim::RunReport<RunOutput>,
    error: ScenarioFailure,
    fs_diff: Option<Box<FsDiff>>,
) -> ScenarioRunError {
    ScenarioRunError {
        error: Box::new(error),
        summary: Box::new(report.summary),
        fs_diff,
    }
}

/// Returns the first of a non-empty list of errors.
fn first(mut errors: Vec<ScenarioError>) -> ScenarioError {
    assert!(
        !errors.is_empty(),
        "a failed check reports at least one error"
    );
    errors.swap_remove(0)
}

/// Reads a scenario file as UTF-8 text of at most its cap ([`InputFile::Scenario`]).
fn read_source(path: &Path) -> Result<String, ScenarioError> {
    let bytes = crate::input::read_input(path, InputFile::Scenario).map_err(|error| {
        let message = match error.problem {
            InputProblem::Io(error) => format!("cannot read the scenario file: {error}"),
            other => other.to_string(),
        };
        ScenarioError::whole_file(path, message)
    })?;
    String::from_utf8(bytes).map_err(|error| {
        let valid = &error.as_bytes()[..error.utf8_error().valid_up_to()];
        let prefix = std::str::from_utf8(valid).expect("the prefix up to valid_up_to is UTF-8");
        let (line, column) = error::line_column(prefix, prefix.len());
        ScenarioError {
            file: path.to_path_buf(),
            line,
            column,
            field: String::new(),
            message: "expected UTF-8 text, found an invalid byte".to_string(),
        }
    })
}

/// Places a TOML syntax error. Its message is `toml_edit`'s, on one line.
fn syntax_error(error: &toml_edit::TomlError, source: &str, path: &Path) -> ScenarioError {
    let offset = error.span().map_or(0, |span| span.start);
    let (line, column) = error::line_column(source, offset);
    let message = error
        .message()
        .trim()
        .lines()
        .map(str::trim)
        .collect::<Vec<_>>()
        .join("; ");
    // TOML integers are i64: a larger one (a seed of u64::MAX) fails the parse itself.
    let bound = if message.contains("too large") {
        format!(" (TOML integers are at most {})", i64::MAX)
    } else {
        String::new()
    };
    ScenarioError {
        file: path.to_path_buf(),
        line,
        column,
        field: syntax_error_field(source, offset),
        message: format!("invalid TOML: {message}{bound}"),
    }
}

/// Names the key a syntax error sits in, as well as the text shows it without a parse: the
/// last `[table]` header above and the last `key =` before the error on its line.
fn syntax_error_field(source: &str, offset: usize) -> String {
    let before = &source[..offset.min(source.len())];
    let (above, line) = before.rsplit_once('\n').unwrap_or(("", before));
    let Some((left, _)) = line.rsplit_once('=') else {
        return String::new();
    };
    let key = left
        .rsplit(|c: char| c == '{' || c == ',' || c.is_whitespace())
        .find(|word| !word.is_empty())
        .unwrap_or_default();
    let table = above
        .lines()
        .rev()
        .map(str::trim)
        .find(|line| line.starts_with('['))
        .map(|header| header.trim_matches(|c| c == '[' || c == ']').trim());
    match table {
        Some(table) if !key.is_empty() => format!("{table}.{key}"),
        _ => key.to_string(),
    }
}
