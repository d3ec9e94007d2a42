//! The process actor: per-program modes behind the actor seam, and the pipeline's handle.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::ser::SerializeStruct;
use serde::{Serialize, Serializer};

use super::replay::{Replayer, UnusedEntry};
use super::runner::{ProcessRecorder, ProcessRunner, RunBounds};
use super::tape::{Captured, ExitStatus, ProcessTape, TapeEntry};
use super::ProcessError;
use crate::actor::{Actor, ActorContext, ActorRef, Answer};
use crate::cap::fault_rules::FaultRules;
use crate::cap::fault_rules::ProcessFault;
use crate::cap::fs::FsActor;
use crate::cap::wasi::{WasiSetup, WasmBounds};
use crate::limits::{Limits, PROCESS_TERM_GRACE_MS};
use crate::tape::sha256_hex;

/// How long a real program may run by default before its group is ended, in milliseconds.
pub(crate) const PROCESS_TIMEOUT_DEFAULT_MS: u64 = 600_000;

/// Bytes that go to the simulation tape as `{size, sha256}` only.
fn digest_fields<S: SerializeStruct>(
    record: &mut S,
    size: &'static str,
    sha: &'static str,
    bytes: &[u8],
) -> Result<(), S::Error> {
    record.serialize_field(size, &(bytes.len() as u64))?;
    record.serialize_field(sha, &sha256_hex(bytes))
}

/// One invocation a pipeline asks for.
///
/// ```
/// use simtape::cap::process::{Command, ProcessRequest};
/// let command = Command::new("git").arg("status").cwd("/tmp/repo").env("LANG", "C");
/// assert_eq!(command.args, ["status"]);
/// // What the process actor receives for it (`ProcessHandle::run` sends it):
/// let request = ProcessRequest::Run(command);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Command {
    /// The program, by name (looked up on `PATH` when run) or path.
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// The working directory; `None` keeps the engine process's own.
    pub cwd: Option<String>,
    /// Environment variables set on top of the inherited environment.
    pub env: BTreeMap<String, String>,
    /// The bytes given on stdin.
    pub stdin: Vec<u8>,
}

impl Command {
    /// Returns a command with no arguments, no cwd, no env and empty stdin.
    pub fn new(program: impl Into<String>) -> Command {
        Command {
            program: program.into(),
            ..Command::default()
        }
    }

    /// Appends one argument.
    pub fn arg(mut self, arg: impl Into<String>) -> Command {
        self.args.push(arg.into());
        self
    }

    /// Appends arguments.
    pub fn args<I: IntoIterator<Item = S>, S: Into<String>>(mut self, args: I) -> Command {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Sets the working directory.
    pub fn cwd(mut self, cwd: impl Into<String>) -> Command {
        self.cwd = Some(cwd.into());
        self
    }

    /// Sets one environment variable.
    pub fn env(mut self, name: impl Into<String>, value: impl Into<String>) -> Command {
        self.env.insert(name.into(), value.into());
        self
    }

    /// Sets stdin.
    pub fn stdin(mut self, bytes: impl Into<Vec<u8>>) -> Command {
        self.stdin = bytes.into();
        self
    }
}

impl Serialize for Command {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut record = serializer.serialize_struct("Command", 6)?;
        record.serialize_field("program", &self.program)?;
        record.serialize_field("args", &self.args)?;
        record.serialize_field("cwd", &self.cwd)?;
        record.serialize_field("env", &self.env)?;
        digest_fields(&mut record, "stdin_size", "stdin_sha256", &self.stdin)?;
        record.end()
    }
}

/// A request to the [`ProcessActor`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum ProcessRequest {
    /// Run a program (`run`).
    Run(Command),
    /// Check the replay tape is used up (`finish`); see [`ProcessActor::check_unused`].
    Finish,
}

/// Bytes dropped by the output cap; zero when nothing was.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Truncation {
    /// Bytes of stdout dropped.
    pub stdout_dropped_bytes: u64,
    /// Bytes of stderr dropped.
    pub stderr_dropped_bytes: u64,
}

impl Truncation {
    /// Returns whether the cap dropped anything.
    pub fn is_truncated(&self) -> bool {
        self.stdout_dropped_bytes > 0 || self.stderr_dropped_bytes > 0
    }
}

/// What a program did. On the simulation tape, stdout and stderr are `{size, sha256}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Output {
    /// How it ended.
    pub status: ExitStatus,
    /// Standard output (at most the cap).
    pub stdout: Vec<u8>,
    /// Standard error (at most the cap).
    pub stderr: Vec<u8>,
    /// The observed (record, real) or recorded (replay) duration; also the call's latency.
    pub duration_ns: u64,
    /// What the output cap dropped.
    pub truncated: Truncation,
    /// Whether the timeout ended it.
    pub timed_out: bool,
    /// The fuel a WASI guest burned (`None` for native programs); identical across runs of
    /// the same seed.
    pub fuel_consumed: Option<u64>,
}

impl Serialize for Output {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let fields = 8 + usize::from(self.fuel_consumed.is_some());
        let mut record = serializer.serialize_struct("Output", fields)?;
        record.serialize_field("status", &self.status)?;
        digest_fields(&mut record, "stdout_size", "stdout_sha256", &self.stdout)?;
        digest_fields(&mut record, "stderr_size", "stderr_sha256", &self.stderr)?;
        record.serialize_field("duration_ns", &self.duration_ns)?;
        record.serialize_field("truncated", &self.truncated)?;
        record.serialize_field("timed_out", &self.timed_out)?;
        // Only guests have the field, so native records keep their shape.
        if let Some(fuel) = self.fuel_consumed {
            record.serialize_field("fuel_consumed", &fuel)?;
        }
        record.end()
    }
}

impl Output {
    fn from_entry(entry: &TapeEntry) -> Output {
        Output {
            status: entry.status,
            stdout: entry.stdout.0.clone(),
            stderr: entry.stderr.0.clone(),
            duration_ns: entry.duration_ns,
            truncated: Truncation {
                stdout_dropped_bytes: entry.stdout_dropped_bytes,
                stderr_dropped_bytes: entry.stderr_dropped_bytes,
            },
            timed_out: entry.timed_out,
            fuel_consumed: None,
        }
    }
}

/// The actor's answer: a run's output, or that the tape check passed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum ProcessReply {
    /// Answer to [`ProcessRequest::Run`].
    Ran(Output),
    /// Answer to [`ProcessRequest::Finish`].
    Finished,
}

/// How one program is handled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ProcessMode {
    /// Run it for real (through the actor's [`ProcessRunner`]); nothing is written down. Not
    /// deterministic.
    Real,
    /// Run it for real and append it to the process tape (the actor's [`ProcessRecorder`]).
    Record,
    /// Answer from the process tape; nothing runs.
    Replay,
    /// Run `<dir>/<program>.wasm` in the WASI sandbox ([`ProcessActor::wasi_dir`],
    /// [`crate::cap::wasi`]); deterministic, in virtual time.
    Wasi,
}

impl ProcessMode {
    fn name(self) -> &'static str {
        match self {
            ProcessMode::Real => "real",
            ProcessMode::Record => "record",
            ProcessMode::Replay => "replay",
            ProcessMode::Wasi => "wasi",
        }
    }
}

/// The process capability: programs by mode, with the process tape of record or replay.
///
/// By default (from [`ProcessActor::hermetic`]) no program is covered and every call is
/// [`ProcessError::NotCovered`].
///
/// ```
/// use simtape::cap::process::{Command, ProcessActor, ProcessTape};
/// let tape = ProcessTape::parse("inline", r#"{"simtape_process": 1}
/// {"program": "git", "args": ["status"], "stdout": "clean\n", "status": {"code": 0}, "duration_ns": 42000000}"#).unwrap();
/// let mut builder = simtape::Sim::builder();
/// builder.process(ProcessActor::replay(tape));
/// let report = builder.build().unwrap().run(|host| async move {
///     host.process().run(Command::new("git").arg("status")).await.unwrap().stdout
/// }).unwrap();
/// assert_eq!(report.output, b"clean\n");
/// assert_eq!(report.summary.end_ns, 42_000_000);
/// ```
#[derive(Debug, Clone)]
pub struct ProcessActor {
    /// Each named program's mode; `None` leaves it uncovered whatever the default.
    pub(super) modes: BTreeMap<String, Option<ProcessMode>>,
    pub(super) fallback: Option<ProcessMode>,
    /// What runs `real` and `record` programs: the outside world's, never the core's.
    runner: Option<Arc<dyn ProcessRunner>>,
    /// Where `record` runs are written down.
    recorder: Option<Arc<dyn ProcessRecorder>>,
    replayer: Option<Replayer>,
    bounds: RunBounds,
    strict_unused: bool,
    /// The injected failures (`faults.rs`).
    pub(super) faults: FaultRules<ProcessFault>,
    /// The WASI modules' directory and engine (`wasi_mode.rs`).
    pub(super) wasi: Option<WasiSetup>,
    /// The bounds of a WASI guest run.
    pub(super) wasm: WasmBounds,
}

impl ProcessActor {
    /// Returns an actor that covers no program (the default, hermetic mode).
    pub fn hermetic() -> ProcessActor {
        ProcessActor {
            modes: BTreeMap::new(),
            fallback: None,
            runner: None,
            recorder: None,
            replayer: None,
            bounds: RunBounds {
                timeout_ms: PROCESS_TIMEOUT_DEFAULT_MS,
                grace_ms: PROCESS_TERM_GRACE_MS,
                output_bytes_max: Limits::default().process_output_bytes_max,
            },
            strict_unused: true,
            faults: FaultRules::default(),
            wasi: None,
            wasm: WasmBounds::from_limits(&Limits::default()),
        }
    }

    /// Returns an actor that runs every program for real, writing nothing down; the programs
    /// run through the runner given with [`ProcessActor::with_runner`].
    pub fn real() -> ProcessActor {
        ProcessActor::hermetic().default_mode(ProcessMode::Real)
    }

    /// Returns an actor that answers every program from `tape`.
    pub fn replay(tape: ProcessTape) -> ProcessActor {
        ProcessActor::hermetic()
            .default_mode(ProcessMode::Replay)
            .replaying(tape)
    }

    /// Sets the mode of programs without their own ([`ProcessActor::mode`]).
    pub fn default_mode(mut self, mode: ProcessMode) -> ProcessActor {
        self.fallback = Some(mode);
        self
    }

    /// Sets the mode of one program, matched by the name exactly as the pipeline passes it.
    pub fn mode(mut self, program: impl Into<String>, mode: ProcessMode) -> ProcessActor {
        self.modes.insert(program.into(), Some(mode));
        self
    }

    /// Leaves one program uncovered (hermetic) whatever the default mode: every call of it is
    /// [`ProcessError::NotCovered`].
    ///
    /// ```
    /// use simtape::cap::process::{Command, ProcessActor, ProcessError};
    /// let mut builder = simtape::Sim::builder();
    /// builder.process(ProcessActor::real().uncover("rm"));
    /// let report = builder.build().unwrap().run(|host| async move {
    ///     host.process().run(Command::new("rm").arg("-rf").arg("/")).await
    /// }).unwrap();
    /// assert!(matches!(report.output, Err(ProcessError::NotCovered { .. })));
    /// ```
    pub fn uncover(mut self, program: impl Into<String>) -> ProcessActor {
        self.modes.insert(program.into(), None);
        self
    }

    /// Gives `real` and `record` mode what runs their programs (the gateway's
    /// `simtape_serve::outside::Spawner`); without one they fail with
    /// [`ProcessError::NoRunner`].
    pub fn with_runner(mut self, runner: Arc<dyn ProcessRunner>) -> ProcessActor {
        self.runner = Some(runner);
        self
    }

    /// Gives record mode where its runs are written down (a process tape); every clone of the
    /// actor appends to the same one.
    pub fn with_recorder(mut self, recorder: Arc<dyn ProcessRecorder>) -> ProcessActor {
        self.recorder = Some(recorder);
        self
    }

    /// Returns whether some program, or the default, is in record mode.
    pub fn records(&self) -> bool {
        self.fallback == Some(ProcessMode::Record)
            || self.modes.values().any(|m| *m == Some(ProcessMode::Record))
    }

    /// Returns whether some program, or the default, is in replay mode.
    pub fn replays(&self) -> bool {
        self.fallback == Some(ProcessMode::Replay)
            || self.modes.values().any(|m| *m == Some(ProcessMode::Replay))
    }

    /// Puts every program in replay mode (and a replay default) in record mode instead: they
    /// run for real and are written to the process tape of
    /// [`crate::Builder::process_record_to`] (`simtape run --record`).
    pub fn record_replayed(mut self) -> ProcessActor {
        let record = |mode: &mut Option<ProcessMode>| {
            if *mode == Some(ProcessMode::Replay) {
                *mode = Some(ProcessMode::Record);
            }
        };
        record(&mut self.fallback);
        self.modes.values_mut().for_each(record);
        self
    }

    /// Gives replay mode its process tape.
    pub fn replaying(mut self, tape: ProcessTape) -> ProcessActor {
        self.replayer = Some(Replayer::new(tape));
        self
    }

    /// Sets how long a real program may run before its group gets TERM.
    pub fn timeout_ms(mut self, timeout_ms: u64) -> ProcessActor {
        self.bounds.timeout_ms = timeout_ms;
        self
    }

    /// Sets the time between TERM and KILL (default [`PROCESS_TERM_GRACE_MS`]).
    pub fn grace_ms(mut self, grace_ms: u64) -> ProcessActor {
        self.bounds.grace_ms = grace_ms;
        self
    }

    /// Takes the output cap from `limits` ([`Limits::process_output_bytes_max`]).
    pub fn limits(mut self, limits: &Limits) -> ProcessActor {
        self.bounds.output_bytes_max = limits.process_output_bytes_max;
        self.wasm = WasmBounds::from_limits(limits);
        self
    }

    /// Sets whether unused replay entries are an error in [`ProcessActor::check_unused`]
    /// (default true).
    pub fn strict_unused(mut self, strict: bool) -> ProcessActor {
        self.strict_unused = strict;
        self
    }

    /// Returns the replay entries no call used, in tape order.
    pub fn unused_entries(&self) -> Vec<UnusedEntry> {
        self.replayer
            .as_ref()
            .map(Replayer::unused_entries)
            .unwrap_or_default()
    }

    /// Returns [`ProcessError::UnusedEntries`] when the actor is strict and replay entries
    /// are left. Call it after the run on [`crate::RunReport::process`], or from the pipeline
    /// through [`ProcessHandle::finish`].
    pub fn check_unused(&self) -> Result<(), ProcessError> {
        let unused = self.unused_entries();
        match unused.first() {
            Some(first) if self.strict_unused => Err(ProcessError::UnusedEntries {
                count: unused.len() as u64,
                first_line: first.line,
                first_program: first.program.clone(),
            }),
            _ => Ok(()),
        }
    }

    /// Returns the mode of `program`, or [`ProcessError::NotCovered`].
    pub(super) fn mode_of(&self, program: &str) -> Result<ProcessMode, ProcessError> {
        self.modes
            .get(program)
            .copied()
            .unwrap_or(self.fallback)
            .ok_or_else(|| ProcessError::NotCovered {
                program: program.to_owned(),
            })
    }

    fn run(&mut self, command: &Command) -> Result<Output, ProcessError> {
        let mode = self.mode_of(&command.program)?;
        let no_tape = || ProcessError::NoTape {
            program: command.program.clone(),
            mode: mode.name().to_owned(),
        };
        let no_runner = || ProcessError::NoRunner {
            program: command.program.clone(),
            mode: mode.name().to_owned(),
        };
        match mode {
            ProcessMode::Real => {
                let runner = self.runner.as_ref().ok_or_else(no_runner)?;
                runner.run(command, &self.bounds)
            }
            ProcessMode::Record => {
                let recorder = self.recorder.as_ref().ok_or_else(no_tape)?;
                let runner = self.runner.as_ref().ok_or_else(no_runner)?;
                let output = runner.run(command, &self.bounds)?;
                recorder.append(&entry_of(command, &output))?;
                Ok(output)
            }
            ProcessMode::Replay => {
                let replayer = self.replayer.as_mut().ok_or_else(no_tape)?;
                Ok(Output::from_entry(replayer.answer(command)?))
            }
            ProcessMode::Wasi => Err(ProcessError::WasiOutsideHandle {
                program: command.program.clone(),
            }),
        }
    }
}

/// Returns the process tape entry of one recorded run.
fn entry_of(command: &Command, output: &Output) -> TapeEntry {
    TapeEntry {
        program: command.program.clone(),
        args: command.args.clone(),
        cwd: command.cwd.clone(),
        env: command.env.clone(),
        stdin_sha256: sha256_hex(&command.stdin),
        stdout: Captured(output.stdout.clone()),
        stderr: Captured(output.stderr.clone()),
        stdout_dropped_bytes: output.truncated.stdout_dropped_bytes,
        stderr_dropped_bytes: output.truncated.stderr_dropped_bytes,
        status: output.status,
        timed_out: output.timed_out,
        duration_ns: output.duration_ns,
    }
}

impl Actor for ProcessActor {
    type Request = ProcessRequest;
    type Response = Result<ProcessReply, ProcessError>;

    fn operation(&self, request: &ProcessRequest) -> &'static str {
        match request {
            ProcessRequest::Run(_) => "run",
            ProcessRequest::Finish => "finish",
        }
    }

    fn handle(
        &mut self,
        request: &ProcessRequest,
        cx: &mut ActorContext<'_>,
    ) -> Answer<Result<ProcessReply, ProcessError>> {
        match request {
            ProcessRequest::Run(command) => match self
                .injected(command, cx.rng)
                .map_or_else(|| self.run(command), Ok)
            {
                // Record, real and replay all take the program's duration, so a replay
                // advances the clock exactly as the recording would have.
                Ok(output) => Answer {
                    latency_ns: output.duration_ns,
                    response: Ok(ProcessReply::Ran(output)),
                },
                Err(error) => Answer {
                    latency_ns: 0,
                    response: Err(error),
                },
            },
            ProcessRequest::Finish => Answer {
                latency_ns: 0,
                response: self.check_unused().map(|()| ProcessReply::Finished),
            },
        }
    }
}

/// The pipeline's handle to the process actor (from [`crate::Host::process`]).
#[derive(Debug, Clone, Copy)]
pub struct ProcessHandle {
    pub(super) actor: ActorRef<ProcessActor>,
    /// The run's filesystem, which WASI guests see as `/`.
    pub(super) fs: Option<ActorRef<FsActor>>,
}

impl ProcessHandle {
    /// Wraps an actor reference.
    pub fn new(actor: ActorRef<ProcessActor>) -> ProcessHandle {
        ProcessHandle { actor, fs: None }
    }

    /// Gives WASI guests the run's filesystem as their root (without it they get an empty
    /// in-memory root whose writes are dropped). [`crate::Host::process`] does this.
    pub(crate) fn with_fs(mut self, fs: Option<ActorRef<FsActor>>) -> ProcessHandle {
        self.fs = fs;
        self
    }

    /// Runs `command` in its program's mode; the call takes the program's duration.
    ///
    /// A WASI program runs here, in the calling task, not inside the actor: see
    /// `wasi_mode.rs`.
    pub async fn run(&self, command: Command) -> Result<Output, ProcessError> {
        let command = match self.run_wasi(command).await {
            Ok(output) => return output,
            Err(native) => native,
        };
        match self.actor.call(ProcessRequest::Run(command)).await? {
            ProcessReply::Ran(output) => Ok(output),
            ProcessReply::Finished => unreachable!("a run request is answered with its output"),
        }
    }

    /// Checks, at the end of a pipeline, that no replay entry is left unused (when strict).
    pub async fn finish(&self) -> Result<(), ProcessError> {
        self.actor.call(ProcessRequest::Finish).await.map(|_| ())
    }
}
