//! The files a scenario references, opened once when the scenario is checked: the overlay
//! root of `[fs]`, the fixture of `[llm]` and the process tape of `[process]` (an extension
//! opens what its own tables name). Paths resolve against the directory of the scenario file.
//! The actors get the fault rules of `[faults]` here.
//!
//! The opened actors are prototypes: every run clones them, so a sweep parses a fixture once
//! and shares it read-only. Host paths stay here; none reaches a tape.

use std::path::{Path, PathBuf};

use super::error::Problem;
use super::schema::{PathField, ProcessSpec, Spec};
use crate::cap::fs::{FsActor, FsError};
use crate::cap::llm::{Llm, LlmActor};
use crate::cap::process::{ProcessActor, ProcessRunner, ProcessTape};
use crate::limits::Limits;

/// The capability actors a scenario's runs start from.
#[derive(Debug, Clone, Default)]
pub(crate) struct Resources {
    pub(crate) fs: Option<FsActor>,
    pub(crate) llm: Option<LlmActor>,
    pub(crate) process: Option<ProcessActor>,
}

/// Opens what `spec` references, relative to `base` (the scenario file's directory),
/// reporting each problem at the field that names the file.
pub(crate) fn open(spec: &Spec, base: &Path) -> Result<Resources, Vec<Problem>> {
    let mut problems = Vec::new();
    let mut resources = Resources::default();
    if let Some(fs) = &spec.fs {
        match open_root(&fs.root, fs.allow_outside, base) {
            Ok(actor) => {
                let actor = actor
                    .with_faults(fs.faults)
                    .with_latency(fs.latency)
                    .with_fault_rules(spec.faults.fs.clone());
                resources.fs = Some(actor);
            }
            Err(problem) => problems.push(problem),
        }
    }
    if let Some(llm) = &spec.llm {
        let fixture = base.join(&llm.fixture.path);
        // A fixture error names the fixture file and line; the problem adds the place in the
        // scenario that points at it.
        let actor = Llm::replay(&fixture).map_err(|e| problem(&llm.fixture, e.to_string()));
        let handover = llm.handover.as_ref().map(|handover| {
            Llm::replay(base.join(&handover.fixture.path))
                .map(|then| (handover.from_call, then))
                .map_err(|e| problem(&handover.fixture, e.to_string()))
        });
        match (actor, handover.transpose()) {
            (Ok(actor), Ok(handover)) => {
                let actor = match handover {
                    Some((from_call, then)) => actor.handing_over(from_call, then),
                    None => actor,
                };
                resources.llm = Some(actor.with_faults(spec.faults.llm.clone()));
            }
            (actor, handover) => {
                problems.extend(actor.err());
                problems.extend(handover.err());
            }
        }
    }
    if let Some(process) = &spec.process {
        match open_process(process, &spec.limits, base) {
            Ok(actor) => resources.process = Some(actor.with_faults(spec.faults.process.clone())),
            Err(problem) => problems.push(problem),
        }
    }
    if problems.is_empty() {
        Ok(resources)
    } else {
        Err(problems)
    }
}

/// Returns the root `root` resolves to from `base` when it lies outside `base`'s directory
/// tree (both with symlinks resolved); `None` when inside, or when either does not resolve.
pub(crate) fn root_outside(root: &str, base: &Path) -> Option<PathBuf> {
    let base = if base.as_os_str().is_empty() {
        Path::new(".")
    } else {
        base
    };
    let resolved = std::fs::canonicalize(base.join(root)).ok()?;
    let base = std::fs::canonicalize(base).ok()?;
    (!resolved.starts_with(&base)).then_some(resolved)
}

fn open_root(root: &PathField, allow_outside: bool, base: &Path) -> Result<FsActor, Problem> {
    let resolved = base.join(&root.path);
    let outside = (!allow_outside)
        .then(|| root_outside(&root.path, base))
        .flatten();
    if let Some(outside) = outside {
        let message = format!(
            "the root {} is outside the scenario's directory, and the agent could read all of it; \
             set `allow_outside = true` in [fs] if that is meant",
            outside.display()
        );
        return Err(problem(root, message));
    }
    FsActor::new(&resolved).map_err(|error| {
        let shown = resolved.display();
        let message = match error {
            FsError::NotFound { .. } => {
                format!("expected an existing directory, found nothing at {shown}")
            }
            FsError::NotADirectory { .. } => {
                format!("expected a directory, found a file at {shown}")
            }
            other => format!("cannot open the overlay root {shown}: {other}"),
        };
        problem(root, message)
    })
}

/// Builds the process actor: hermetic, then the default mode, each program's mode, the
/// process tape (parsed now, so its errors name its file and line) and the WASI modules'
/// directory (each program named in wasi mode must have its module there).
fn open_process(spec: &ProcessSpec, limits: &Limits, base: &Path) -> Result<ProcessActor, Problem> {
    let mut actor = ProcessActor::hermetic().limits(limits);
    if let Some(mode) = spec.default {
        actor = actor.default_mode(mode);
    }
    for (program, mode) in &spec.programs {
        actor = match mode {
            Some(mode) => actor.mode(program, *mode),
            None => actor.uncover(program),
        };
    }
    if let Some(tape) = &spec.tape {
        let resolved = existing_file(tape, base, "process tape")?;
        // The tape error names the tape file and line; the problem adds the scenario field.
        let loaded =
            ProcessTape::load(&resolved).map_err(|error| problem(tape, error.to_string()))?;
        actor = actor.replaying(loaded);
    }
    if let Some(dir) = &spec.wasi_dir {
        let resolved = base.join(&dir.path);
        if !resolved.is_dir() {
            let message = format!(
                "expected a directory of WASI modules, found no directory at {}",
                resolved.display()
            );
            return Err(problem(dir, message));
        }
        for program in &spec.wasi_programs {
            let module = resolved.join(format!("{}.wasm", program.path));
            if !module.is_file() {
                let message = format!(
                    "expected the WASI module of {:?} at {}, found nothing",
                    program.path,
                    module.display()
                );
                return Err(problem(program, message));
            }
            if let Err(why) = crate::cap::wasi::check_module(&module) {
                let message = format!(
                    "the WASI module of {:?} at {} is not valid: {why}",
                    program.path,
                    module.display()
                );
                return Err(problem(program, message));
            }
        }
        actor = actor.wasi_dir(resolved);
    }
    Ok(actor)
}

impl super::Scenario {
    /// Returns whether `[process]` puts some program (or its default) in `replay` mode.
    pub fn replays_processes(&self) -> bool {
        self.resources
            .process
            .as_ref()
            .is_some_and(ProcessActor::replays)
    }

    /// Returns the `[process] tape` file, resolved against the scenario file's directory.
    pub fn process_tape_path(&self) -> Option<PathBuf> {
        let tape = self.spec.process.as_ref()?.tape.as_ref()?;
        let base = self.path().parent().unwrap_or(Path::new(""));
        Some(base.join(&tape.path))
    }

    /// Runs every program without a mode (or, under a replay default, without a process
    /// tape entry) as a WASI guest from `dir`: what `simtape run --process-wasi DIR` does.
    /// A scenario without `[process]` gets a process actor that runs every program so.
    pub fn process_wasi(&mut self, dir: &Path) {
        let resources = std::sync::Arc::make_mut(&mut self.resources);
        let actor = match resources.process.take() {
            Some(actor) => actor.wasi_fallback(dir),
            None => ProcessActor::wasi(dir).limits(&self.spec.limits),
        };
        resources.process = Some(actor);
    }

    /// Gives the programs `[process]` puts in `real` or `record` mode what runs them (the
    /// gateway's `simtape_serve::outside::Spawner`, which the `simtape` command passes to
    /// every scenario it loads); without one they fail with `ProcessError::NoRunner`.
    pub fn set_process_runner(&mut self, runner: std::sync::Arc<dyn ProcessRunner>) {
        let resources = std::sync::Arc::make_mut(&mut self.resources);
        if let Some(actor) = resources.process.take() {
            resources.process = Some(actor.with_runner(runner));
        }
    }
}

/// Returns the file `file` names, resolved against `base`, when it is a file; `what` names
/// its kind in the problem otherwise.
fn existing_file(file: &PathField, base: &Path, what: &str) -> Result<PathBuf, Problem> {
    let resolved = base.join(&file.path);
    if resolved.is_file() {
        return Ok(resolved);
    }
    let found = if resolved.exists() {
        "a directory"
    } else {
        "nothing"
    };
    let shown = resolved.display();
    let message = format!("expected an existing {what} file, found {found} at {shown}");
    Err(problem(file, message))
}

impl super::decode::Decoder {
    /// Returns the file `file` names, resolved against `base`, when it is a file; reports
    /// that it is not otherwise (`what` names its kind: "world spec").
    pub fn existing_file(&mut self, file: &PathField, base: &Path, what: &str) -> Option<PathBuf> {
        let found = existing_file(file, base, what)
            .map_err(|problem| self.problems.push(problem))
            .ok();
        if found.is_some() {
            self.note_input(&file.path);
        }
        found
    }
}

fn problem(field: &PathField, message: String) -> Problem {
    Problem {
        span: field.span.clone(),
        field: field.field.clone(),
        message,
    }
}
