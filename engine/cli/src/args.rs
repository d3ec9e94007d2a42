//! The command-line grammar (clap derive).

use std::path::PathBuf;

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use clap::{Args, Parser, Subcommand, ValueEnum};
use simtape_eval::sweep::ReportFormat;

const EXIT_CODES: &str = "\
Exit codes:
  0  success: the run completed, the tapes are equal, the tape is sound
  1  a finding: tapes diverge, a run is not deterministic, a replay differs, a tape is damaged
  2  bad usage or bad input: arguments, scenario files, unreadable tapes
  3  the simulated run ended in error: deadlock, task panic, limit reached, a failed step
  4  a policy blocked the run: egress denied, an fs escape, a disabled tool a gate needs";

const SWEEP_EXIT_CODES: &str = "\
Exit codes:
  0  every seed ran and passed
  1  some seed failed, was blocked or ended in error, or the sweep was stopped before every seed ran
  2  bad usage or bad input: arguments, scenario files, unreadable reports";

const EXPLORE_EXIT_CODES: &str = "\
Exit codes:
  0  every run passed: nothing found
  1  some run failed, was blocked or ended in error (each cluster is listed, shrunk with --out)
  2  bad usage or bad input: arguments, scenario files, a scenario that draws nothing";

/// simtape: deterministic simulation for LLM-agent pipelines.
#[derive(Debug, Parser)]
#[command(
    name = "simtape",
    version,
    about = "Deterministic simulation for testing LLM-agent pipelines: run, replay and diff tapes",
    after_help = EXIT_CODES
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Runs a scenario at one seed and writes its tape.
    #[command(after_help = EXIT_CODES)]
    Run(RunArgs),
    /// Re-runs the scenario and seed recorded in a tape and checks the new tape is
    /// byte-identical.
    #[command(after_help = EXIT_CODES)]
    Replay(ReplayArgs),
    /// Compares two tapes and reports the first divergence.
    #[command(after_help = EXIT_CODES)]
    Diff(DiffArgs),
    /// Reruns a failing tape's run with fewer and simpler decisions until none can go
    /// without losing the failure; writes the minimal decisions and tape.
    #[command(after_help = EXIT_CODES)]
    Shrink(ShrinkArgs),
    /// Reruns a tape's run taking its decisions up to a record, then drawing from another
    /// seed: one of the futures the run could have had from there.
    #[command(after_help = EXIT_CODES)]
    Fork(ForkArgs),
    /// Finds when a failing run's failure became inevitable: forks from before each of its
    /// decisions, and the share of futures that fail the same way.
    #[command(after_help = EXIT_CODES)]
    Explain(ExplainArgs),
    /// Searches a scenario for failures: swarm runs (a random subset of its fault rules, at
    /// scaled rates) and forks of the runs that reached something new; every failure found
    /// is shrunk and stored.
    #[command(after_help = EXPLORE_EXIT_CODES)]
    Explore(ExploreArgs),
    /// Reads, exports and verifies tapes.
    #[command(after_help = EXIT_CODES)]
    Tape(TapeArgs),
    /// Validates a scenario file and reports every problem with file, line and field.
    #[command(after_help = EXIT_CODES)]
    Check(CheckArgs),
    /// Runs every scenario at its pinned seeds and compares each tape byte for byte with its
    /// golden tape under `tapes/`.
    #[command(after_help = EXIT_CODES)]
    Ci(CiArgs),
    /// Writes a small working scenario to start from.
    #[command(after_help = EXIT_CODES)]
    New(NewArgs),
    /// Runs scenarios at every seed of a range on a pool of threads, summarizes pass rate,
    /// pass@k and pass^k, and writes a report; failing tapes are kept under --out.
    #[command(after_help = SWEEP_EXIT_CODES)]
    Sweep(SweepArgs),
    /// Works with sweep reports: merges the reports of a sweep's shards.
    #[command(after_help = SWEEP_EXIT_CODES)]
    Report(ReportArgs),
    /// Runs an agent program once against a real provider and writes a scenario that
    /// replays it: the scenario, a fixture, the project snapshot (docs/quickstart.md).
    #[command(after_help = EXIT_CODES)]
    Record(crate::cmd_record::RecordArgs),
    /// Makes replayable inputs from a run: the LLM fixture of a tape's model calls.
    #[command(after_help = EXIT_CODES)]
    Fixtures(FixturesArgs),
    /// MCP tool servers: record, replay and verify cassettes; serve and score simulated worlds.
    Mcp(crate::cmd_mcp::McpArgs),
    /// Serves a scenario's model on loopback HTTP (Anthropic Messages, OpenAI Chat
    /// Completions) to an agent process, in virtual time, onto one tape.
    #[command(after_help = EXIT_CODES)]
    Serve(crate::cmd_serve::ServeArgs),
}

#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    /// The scenario file (TOML).
    pub(crate) scenario: PathBuf,
    /// The seed (default: the scenario's first pinned seed).
    #[arg(long)]
    pub(crate) seed: Option<u64>,
    /// The agent program of an `[agent] kind = "command"` scenario, overriding its `command`
    /// and the adapter's usual binary (docs/agents.md).
    #[arg(long, value_name = "PATH")]
    pub(crate) agent_bin: Option<PathBuf>,
    /// Run an agent program on the host, unconfined, instead of in simtape's namespace
    /// sandbox (docs/sandbox.md); the verdict line and the tape say so.
    #[arg(long)]
    pub(crate) no_sandbox: bool,
    /// An agent program's settle window, in wall-clock milliseconds: how long the driver
    /// waits for more of its requests before ordering a batch (over `[agent] settle`; raise it
    /// for an agent whose parallel requests arrive further apart, docs/serve.md).
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(0..=60_000))]
    pub(crate) settle_ms: Option<u64>,
    /// Runs agent NAME in place of the scenario's: one of its `[[agent.variant]]` tables or
    /// an adapter (docs/sweeps.md, "One sweep across agents").
    #[arg(long, value_name = "NAME")]
    pub(crate) agent: Option<String>,
    /// Where to write the tape (default: no tape file).
    #[arg(long)]
    pub(crate) tape: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) record: crate::common::record::RecordLlmArgs,
    /// Record every replay source the scenario has instead of replaying it: the model from
    /// the real provider its [llm.record] section names (the key from that section's
    /// environment variable), into its fixture; the programs in [process] replay mode run for
    /// real, into its process tape (or --record-dir). MCP cassettes are refused (record them
    /// with `simtape mcp record`). The tape, if any, carries no inputs: `simtape replay TAPE
    /// --scenario SCENARIO` checks that the recording replays.
    #[arg(long = "record", conflicts_with_all = ["record_llm", "check_determinism"])]
    pub(crate) record_sources: bool,
    /// Store large payloads beside the tape in `<tape>.cas/` instead of inside it.
    #[arg(long, requires = "tape")]
    pub(crate) sidecar_blobs: bool,
    /// Run twice and compare the two tapes byte for byte.
    #[arg(long)]
    pub(crate) check_determinism: bool,
    /// Print the run summary as JSON: stdout is that one document (the seed line goes to
    /// stderr).
    #[arg(long)]
    pub(crate) json: bool,
    /// Write the run's filesystem diff (unified format) to this file; the scenario must have
    /// an `[fs]` table.
    #[arg(long, value_name = "PATH")]
    pub(crate) emit_diff: Option<PathBuf>,
    /// Take the run's random choices from this decisions file where it lists them (JSON:
    /// `[{"name": "llm#0", "value": 7}]`, see docs/shrinking.md); the tape header carries
    /// the file's digest and overrides, so the tape replays alone.
    #[arg(long, value_name = "FILE", conflicts_with = "check_determinism")]
    pub(crate) decisions: Option<PathBuf>,
    /// Write every decision the run took (name and value, in order) to this JSON file.
    #[arg(long, value_name = "FILE")]
    pub(crate) decisions_out: Option<PathBuf>,
    /// Write the evidence of the run to this directory: the tape (unless --tape puts it
    /// elsewhere), the fs diff, the verdict as JSON, the replay command, and a manifest with
    /// the SHA-256 of every artifact.
    #[arg(long, value_name = "DIR")]
    pub(crate) evidence: Option<PathBuf>,
    /// Run every program without a mode (or without a process tape entry, under a replay
    /// default) as the WASI module `DIR/<program>.wasm`, in the sandbox.
    #[arg(long, value_name = "DIR")]
    pub(crate) process_wasi: Option<PathBuf>,
    /// Where programs in `[process]` record mode write their process tape,
    /// `DIR/<scenario>.process.jsonl` (default: the scenario file's directory; with
    /// --record, the scenario's own [process] tape).
    #[arg(long, value_name = "DIR")]
    pub(crate) record_dir: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub(crate) struct ReplayArgs {
    /// The tape to replay.
    pub(crate) tape: PathBuf,
    /// Use this scenario file instead of the source embedded in the tape (its digest must
    /// match the tape's).
    #[arg(long)]
    pub(crate) scenario: Option<PathBuf>,
    /// Keep the replayed tape at this path.
    #[arg(long)]
    pub(crate) out: Option<PathBuf>,
    /// For an agent-program scenario: run the program again against the scenario (its
    /// requests must come out the same) instead of feeding the tape's recorded inputs.
    #[arg(long)]
    pub(crate) rerun_agent: bool,
    /// The agent program for --rerun-agent (as `simtape run --agent-bin`).
    #[arg(long, value_name = "PATH", requires = "rerun_agent")]
    pub(crate) agent_bin: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub(crate) struct ShrinkArgs {
    /// The failing run's tape (of `simtape run`, `sweep` or `ci`).
    pub(crate) tape: PathBuf,
    /// Where to write decisions.json, min.tape and the scenario (default: the tape's path
    /// with the extension `.shrink`).
    #[arg(short = 'o', long = "out", value_name = "DIR")]
    pub(crate) out: Option<PathBuf>,
    /// The failure database to record the shrunk run in (default: `OUT/failures.db` when the
    /// tape is a sweep's `OUT/<scenario>/seed-N.tape`), so the next sweep replays it.
    #[arg(long, value_name = "DIR")]
    pub(crate) failures: Option<PathBuf>,
    /// The most reruns the search makes (an agent program runs once per rerun).
    #[arg(long, value_name = "N", default_value_t = 200, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub(crate) max_reruns: u32,
    /// The agent program, for an agent-program scenario (as `simtape run --agent-bin`).
    #[arg(long, value_name = "PATH")]
    pub(crate) agent_bin: Option<PathBuf>,
    /// Print nothing (`simtape explore --json` shrinks what it finds and prints only JSON).
    #[arg(skip)]
    pub(crate) quiet: bool,
}

#[derive(Debug, Args)]
pub(crate) struct ExplainArgs {
    /// The failing run's tape.
    pub(crate) tape: PathBuf,
    /// Forks at each point (each a run of the scenario; an agent program runs each time).
    #[arg(long, value_name = "K", default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub(crate) forks: u32,
    /// Also write the run's tape page with the curve drawn above its timeline.
    #[arg(long, value_name = "OUT")]
    pub(crate) html: Option<PathBuf>,
    /// The agent program, for an agent-program scenario (as `simtape run --agent-bin`).
    #[arg(long, value_name = "PATH")]
    pub(crate) agent_bin: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub(crate) struct ExploreArgs {
    /// The scenario to explore.
    pub(crate) scenario: PathBuf,
    /// The most runs to make.
    #[arg(long, value_name = "N", default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) runs: u64,
    /// A wall-clock bound besides --runs (`90s`, `10m`): no new batch of runs starts after
    /// it. The report of a run cut by it depends on the machine's speed.
    #[arg(long, value_name = "DURATION", value_parser = wall_budget)]
    pub(crate) budget: Option<std::time::Duration>,
    /// The exploration's seed: the same seed gives the same runs and the same report.
    #[arg(long, value_name = "E", default_value_t = 0)]
    pub(crate) seed: u64,
    /// How runs are planned: `guided` (swarm runs and forks of the runs that reached
    /// something new), `swarm` (swarm runs only) or `uniform` (fresh seeds, as a sweep).
    #[arg(long, value_name = "NAME", default_value = "guided", value_parser = strategy)]
    pub(crate) strategy: simtape_eval::explore::Strategy,
    /// Worker threads (default: the available parallelism). Results do not depend on it.
    #[arg(long)]
    pub(crate) jobs: Option<std::num::NonZeroUsize>,
    /// Write the report (explore.json), the first failing run of each cluster (its tape and
    /// decisions) and its shrink under DIR, and store each cluster in DIR/failures.db.
    #[arg(long, value_name = "DIR")]
    pub(crate) out: Option<PathBuf>,
    /// The failure database to store the clusters in (default: DIR/failures.db under --out).
    #[arg(long, value_name = "DIR", requires = "out")]
    pub(crate) failures: Option<PathBuf>,
    /// Print the report as JSON instead of text (the same as `--report json`).
    #[arg(long, conflicts_with = "report")]
    pub(crate) json: bool,
    /// The report format, as sweep's (to standard output instead of the text, or to
    /// --report-out): one line, row or test case per failure cluster, or a page with the
    /// coverage curve.
    #[arg(long, value_parser = report_format())]
    pub(crate) report: Option<ReportFormat>,
    /// Write the report to this file (default format: json); the text still goes to standard
    /// output.
    #[arg(long, value_name = "PATH")]
    pub(crate) report_out: Option<PathBuf>,
    /// The agent program, for an agent-program scenario (as `simtape run --agent-bin`).
    #[arg(long, value_name = "PATH")]
    pub(crate) agent_bin: Option<PathBuf>,
}

/// Parses `--strategy`.
fn strategy(text: &str) -> Result<simtape_eval::explore::Strategy, String> {
    simtape_eval::explore::Strategy::named(text).ok_or_else(|| {
        format!(
            "expected one of {}",
            simtape_eval::explore::Strategy::NAMES.join(", ")
        )
    })
}

/// Parses a wall-clock bound such as `10m`; zero is refused (a budget of nothing runs
/// nothing).
fn wall_budget(text: &str) -> Result<std::time::Duration, String> {
    match simtape::time::parse_duration_ns(text).map_err(|e| e.to_string())? {
        0 => Err("a budget of 0 runs nothing; give a positive duration".into()),
        ns => Ok(std::time::Duration::from_nanos(ns)),
    }
}

#[derive(Debug, Args)]
pub(crate) struct ForkArgs {
    /// The parent run's tape (of `simtape run`, `sweep`, `shrink` or `fork`).
    pub(crate) tape: PathBuf,
    /// The branch point: a record of the parent tape, as `simtape tape show` numbers them.
    /// The child takes every decision the parent took before it.
    #[arg(long, value_name = "RECORD")]
    pub(crate) at: u64,
    /// The seed the child draws from after the branch point.
    #[arg(long, value_name = "M")]
    pub(crate) seed: u64,
    /// Where to write the child's tape (default: beside the parent, named by RECORD and M);
    /// its decisions file goes beside it (`.decisions.json`).
    #[arg(long = "tape", value_name = "PATH")]
    pub(crate) out: Option<PathBuf>,
    /// The agent program, for an agent-program scenario (as `simtape run --agent-bin`).
    #[arg(long, value_name = "PATH")]
    pub(crate) agent_bin: Option<PathBuf>,
    /// From the first model call at or after the branch point on, this fixture answers instead
    /// of the scenario's (the child's scenario gets an `[llm.handover]` and carries the file).
    #[arg(long, value_name = "FILE", conflicts_with = "model")]
    pub(crate) fixture: Option<PathBuf>,
    /// From the first model call at or after the branch point on, record the model from this
    /// provider's real API (its key from ANTHROPIC_API_KEY / OPENAI_API_KEY) into a fixture
    /// beside the child's tape, which then answers those calls in the child.
    #[arg(long, value_enum, value_name = "PROVIDER")]
    pub(crate) model: Option<crate::common::record::RecordProvider>,
    /// The provider's base URL for --model, as its SDK takes it (default: the official API).
    #[arg(long, value_name = "URL", requires = "model")]
    pub(crate) upstream: Option<String>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum DiffMode {
    /// Every field of every record, timing included.
    Exact,
    /// Every field except virtual time.
    Semantic,
    /// Only final effects (outcome records) and the verdict.
    Outcome,
}

#[derive(Debug, Args)]
pub(crate) struct DiffArgs {
    /// The first tape.
    pub(crate) a: PathBuf,
    /// The second tape.
    pub(crate) b: PathBuf,
    /// What counts as a difference.
    #[arg(long, value_enum, default_value_t = DiffMode::Exact)]
    pub(crate) mode: DiffMode,
    /// Print the report as JSON.
    #[arg(long)]
    pub(crate) json: bool,
    /// Also write the diff as one self-contained HTML page: both timelines, the first
    /// divergence marked (docs/viewing.md).
    #[arg(long, value_name = "FILE")]
    pub(crate) html: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub(crate) struct TapeArgs {
    #[command(subcommand)]
    pub(crate) command: TapeCommand,
}

#[derive(Debug, Subcommand)]
pub(crate) enum TapeCommand {
    /// Prints the header and the records for people.
    Show {
        /// The tape.
        tape: PathBuf,
        /// Show at most this many records.
        #[arg(long, conflicts_with = "tree")]
        limit: Option<u64>,
        /// Show turns, calls and their results as an indented tree with virtual times.
        #[arg(long)]
        tree: bool,
        /// Colour the tree: on a terminal only (auto), always, or never.
        #[arg(long, value_enum, default_value_t = ColorWhen::Auto)]
        color: ColorWhen,
    },
    /// Writes the tape as one self-contained HTML page: the timeline, each record's payload,
    /// the transcript, the file tree changes, the verifiers and the verdict.
    Report {
        /// The tape.
        tape: PathBuf,
        /// The page to write.
        #[arg(long, short)]
        output: PathBuf,
        /// Draw only from this virtual time on (e.g. `1.5s`, `250ms`).
        #[arg(long, value_parser = virtual_time)]
        from: Option<u64>,
        /// Draw only up to this virtual time.
        #[arg(long, value_parser = virtual_time)]
        to: Option<u64>,
    },
    /// Exports the tape as JSON lines (header, then every record) or as a trace.
    Export {
        /// The tape.
        tape: PathBuf,
        /// Write JSON lines (the same as `--format jsonl`).
        #[arg(long, conflicts_with = "format")]
        jsonl: bool,
        /// The export format: `jsonl`, or `chrome-trace` (the Trace Event Format that
        /// Perfetto and chrome://tracing open, in virtual time; docs/viewing.md).
        #[arg(long, value_enum)]
        format: Option<ExportFormat>,
        /// Write to this file instead of standard output.
        #[arg(long, short)]
        output: Option<PathBuf>,
    },
    /// Checks framing, the hash chain, checkpoints, blobs, the footer and the inputs.
    Verify {
        /// The tape.
        tape: PathBuf,
    },
    /// Writes the tape's scenario and every file its run read into DIR (empty or new): a
    /// reproduction that `simtape run DIR/<name>.toml --seed N` runs to the same tape.
    Unpack {
        /// The tape.
        tape: PathBuf,
        /// Where to write (created; must be empty if it exists).
        dir: PathBuf,
    },
}

#[derive(Debug, Args)]
pub(crate) struct FixturesArgs {
    #[command(subcommand)]
    pub(crate) command: FixturesCommand,
}

#[derive(Debug, Subcommand)]
pub(crate) enum FixturesCommand {
    /// Writes DIR/llm.jsonl: a fixture entry for each model call the tape's run answered
    /// from its fixture, so the conversations replay with the same answers.
    FromTape {
        /// The tape.
        tape: PathBuf,
        /// Where to write (created if absent).
        dir: PathBuf,
    },
}

/// When `simtape tape show --tree` uses colours.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ColorWhen {
    /// Only when standard output is a terminal.
    Auto,
    /// Always.
    Always,
    /// Never.
    Never,
}

/// Parses a virtual time such as `250ms` into nanoseconds.
fn virtual_time(text: &str) -> Result<u64, String> {
    simtape::time::parse_duration_ns(text).map_err(|e| e.to_string())
}

/// What `simtape tape export` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ExportFormat {
    /// The header, then one JSON object per record.
    Jsonl,
    /// The Trace Event Format (a JSON object with `traceEvents`).
    ChromeTrace,
}

#[derive(Debug, Args)]
pub(crate) struct CheckArgs {
    /// The scenario file.
    pub(crate) scenario: PathBuf,
    /// Print the result as JSON on stdout: `ok`, the name and seeds, every problem.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct CiArgs {
    /// The project directory holding `scenarios/` and `tapes/`.
    #[arg(default_value = ".")]
    pub(crate) dir: PathBuf,
    /// Rewrite the golden tapes that are missing or differ.
    #[arg(long)]
    pub(crate) bless: bool,
    /// A sweep's failure database (docs/failures.md): first replay the known failures of
    /// the scenarios under `scenarios/` and say which still fail (a finding) and which are
    /// resolved; the database is read, not written.
    #[arg(long, value_name = "DIR")]
    pub(crate) failures: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub(crate) struct NewArgs {
    /// The scenario's name (lower-case letters, digits, '-').
    pub(crate) name: String,
    /// Where to write it (default: `scenarios/` when it exists, else the current directory).
    /// Beside a `tapes/` directory (the layout `simtape ci` checks), its golden tapes are
    /// written too.
    #[arg(long)]
    pub(crate) dir: Option<PathBuf>,
    /// Writes a scenario whose agent is this program (`"python3 agent.py"`, split as a shell
    /// splits words; the `generic` adapter), with a fixture to fill in (docs/agents.md).
    #[arg(long, value_name = "COMMAND LINE")]
    pub(crate) command: Option<String>,
}

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub(crate) struct SweepArgs {
    #[command(subcommand)]
    pub(crate) command: Option<SweepCommand>,
    /// The scenario files (TOML); each is loaded once and shared by every run.
    #[arg(required = true)]
    pub(crate) scenarios: Vec<PathBuf>,
    /// The agent program of `[agent] kind = "command"` scenarios (docs/agents.md).
    #[arg(long, value_name = "PATH")]
    pub(crate) agent_bin: Option<PathBuf>,
    /// Run an agent program on the host, unconfined, instead of in simtape's namespace
    /// sandbox (docs/sandbox.md); the verdict line and the tape say so.
    #[arg(long)]
    pub(crate) no_sandbox: bool,
    /// An agent program's settle window, in wall-clock milliseconds: how long the driver
    /// waits for more of its requests before ordering a batch (over `[agent] settle`; raise it
    /// for an agent whose parallel requests arrive further apart, docs/serve.md).
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(0..=60_000))]
    pub(crate) settle_ms: Option<u64>,
    /// Runs the same seeds once per agent, each name one of the scenario's `[[agent.variant]]`
    /// tables or an adapter: each agent's pass rate, pass@k and pass^k, and every two
    /// compared seed by seed (docs/sweeps.md, "One sweep across agents").
    #[arg(long, value_name = "NAME,…", value_delimiter = ',')]
    pub(crate) agents: Vec<String>,
    /// The seeds: `A..B` (B excluded) or `A..=B`.
    #[arg(long, required = true, value_parser = simtape_eval::sweep::parse_seeds)]
    pub(crate) seeds: Option<simtape_eval::sweep::SeedRange>,
    /// Worker threads (default: the available parallelism; at most 256). Results do not
    /// depend on it.
    #[arg(long)]
    pub(crate) jobs: Option<std::num::NonZeroUsize>,
    /// Run only shard I of N (0-based): the seeds s with s mod N = I. `auto` (or `auto/N`)
    /// reads I and N from a Slurm array, a Kubernetes Indexed Job or a CI matrix
    /// (docs/sweeps.md).
    #[arg(long, value_name = "I/N|auto", value_parser = simtape_serve::shard::parse_shard_arg)]
    pub(crate) shard: Option<simtape_serve::shard::ShardArg>,
    /// Keep the tape of every failing seed as DIR/<scenario>/seed-<N>.tape, and every
    /// seed's result under DIR/results.cache/ (for --resume).
    #[arg(long, value_name = "DIR")]
    pub(crate) out: Option<PathBuf>,
    /// Continue a sweep killed or stopped part-way: the seeds whose result --out already
    /// holds are not run again; the report is the uninterrupted sweep's.
    #[arg(long, requires = "out")]
    pub(crate) resume: bool,
    /// A result cache shared between sweeps: a run whose key (engine, scenario, every file
    /// it reads, seed) has a result in DIR is not run again (docs/sweeps.md).
    #[arg(long, value_name = "DIR")]
    pub(crate) cache: Option<PathBuf>,
    /// The report format (to standard output, or to --report-out).
    #[arg(long, value_parser = report_format())]
    pub(crate) report: Option<ReportFormat>,
    /// Write the report to this file (default format: json).
    #[arg(long, value_name = "PATH")]
    pub(crate) report_out: Option<PathBuf>,
    /// The failure database (default: DIR/failures under --out; docs/failures.md): its known
    /// failures are replayed before the other seeds, then it is updated with this sweep's.
    #[arg(long, value_name = "DIR")]
    pub(crate) failures: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub(crate) enum SweepCommand {
    /// Writes a ready job file that runs the sweep on a scheduler: a Slurm job array and a
    /// merge job after it, or a Kubernetes Indexed Job and a merge Job (docs/sweeps.md).
    Plan(PlanArgs),
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("scheduler").required(true).args(["slurm", "k8s"])))]
pub(crate) struct PlanArgs {
    /// Write a Slurm submit script (run it with `bash FILE`).
    #[arg(long)]
    pub(crate) slurm: bool,
    /// Write a Kubernetes manifest (apply it with `kubectl apply -f FILE`).
    #[arg(long, requires = "image")]
    pub(crate) k8s: bool,
    /// The scenario files, as the jobs will name them.
    #[arg(required = true)]
    pub(crate) scenarios: Vec<PathBuf>,
    /// The seeds: `A..B` (B excluded) or `A..=B`.
    #[arg(long, value_parser = simtape_eval::sweep::parse_seeds)]
    pub(crate) seeds: simtape_eval::sweep::SeedRange,
    /// How many shards (Slurm array tasks, Kubernetes completions).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) shards: u64,
    /// Where the shard reports, the failing seeds' tapes and the merged report go (default:
    /// `sweep-results` for Slurm, `/results` for Kubernetes, where the claim is mounted).
    #[arg(long, value_name = "DIR")]
    pub(crate) results: Option<PathBuf>,
    /// Write the job file here (default: standard output).
    #[arg(long, short, value_name = "FILE")]
    pub(crate) out: Option<PathBuf>,
    /// The simtape binary the jobs run (default: this binary's absolute path for Slurm,
    /// `simtape` on the image's PATH for Kubernetes).
    #[arg(long, value_name = "PATH")]
    pub(crate) simtape: Option<String>,
    /// The jobs' name; the merge job is NAME-merge.
    #[arg(long, default_value = "simtape-sweep")]
    pub(crate) name: String,
    /// The container image (Kubernetes): it holds simtape and the scenarios.
    #[arg(long)]
    pub(crate) image: Option<String>,
    /// The PersistentVolumeClaim (ReadWriteMany) every pod mounts at the results directory.
    #[arg(long, default_value = "simtape-results")]
    pub(crate) claim: String,
}

#[derive(Debug, Args)]
pub(crate) struct ReportArgs {
    #[command(subcommand)]
    pub(crate) command: ReportCommand,
}

#[derive(Debug, Subcommand)]
pub(crate) enum ReportCommand {
    /// Joins the JSON reports of a sweep's shards into the report of the whole sweep.
    Merge {
        /// The shard reports (`sweep --report json`), one per shard, in any order.
        #[arg(required = true)]
        reports: Vec<PathBuf>,
        /// The merged report's format (default: json).
        #[arg(long, value_parser = report_format())]
        report: Option<ReportFormat>,
        /// Write the merged report to this file instead of standard output.
        #[arg(long, value_name = "PATH")]
        report_out: Option<PathBuf>,
    },
    /// Compares two JSON sweep reports: failure clusters new, resolved and ongoing, pass rate
    /// and pass^k with 95 % intervals, and the exact paired sign test on the common seeds
    /// (docs/failures.md). Exit 1 when the new sweep has a new cluster or is significantly
    /// less robust.
    Diff {
        /// The earlier sweep's JSON report.
        old: PathBuf,
        /// The later sweep's JSON report.
        new: PathBuf,
        /// Print the diff as JSON instead of text.
        #[arg(long)]
        json: bool,
        /// Also write the diff as a self-contained HTML page.
        #[arg(long, value_name = "OUT")]
        html: Option<PathBuf>,
    },
}

/// Parses a sweep report format; the names and their help are simtape-eval's.
fn report_format() -> impl TypedValueParser<Value = ReportFormat> {
    let values = ReportFormat::ALL
        .map(|format| PossibleValue::new(format.name()).help(format.description()));
    PossibleValuesParser::new(values)
        .map(|name| ReportFormat::from_name(&name).expect("clap accepts only the formats' names"))
}
