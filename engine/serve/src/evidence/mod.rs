//! `simtape run --evidence DIR`: everything a reviewer needs to trust (or reproduce) one run,
//! in one directory: the tape, the fs diff, the verdict, the replay script, a manifest with
//! the SHA-256 of every artifact, and the run-and-test contract's files (`contract`). The
//! documents' shapes are `simtape_eval::evidence`'s and `simtape_eval::run_json`'s; writing
//! them, and running the gates on the base tree, is the outside's, so it is here.
//!
//! The evidence names paths the run saw: [`EvidenceError`] names the file that could not be
//! written.

mod contract;

use std::path::{Component, Path, PathBuf};

use simtape::tape::sha256_hex;
use simtape_agent::{EvalReport, EvalScenario};
use simtape_eval::run_json::{to_json_pretty, ArtifactJson, EvidenceManifest, EvidenceVerdict};

pub use contract::{Before, NotRun};

use simtape_eval::reproduce::command_line;

/// The artifacts' file names inside the evidence directory.
pub const TAPE_FILE: &str = "run.tape";
const DIFF_FILE: &str = "fs.diff";
const DIFF_JSON_FILE: &str = "fs-diff.json";
const VERDICT_FILE: &str = "verdict.json";
const REPLAY_FILE: &str = "replay.sh";
const MANIFEST_FILE: &str = "manifest.json";

/// What the run left, for the evidence.
#[derive(Debug)]
pub struct RunEvidence<'a> {
    /// The scenario that ran.
    pub scenario: &'a EvalScenario,
    /// Its file, as given on the command line (the replay script names it).
    pub scenario_path: &'a Path,
    /// The run's seed.
    pub seed: u64,
    /// What the run gave.
    pub report: &'a EvalReport,
    /// Its tape.
    pub tape: &'a Path,
    /// The command that reproduces it.
    pub reproduce: &'a str,
    /// The gates on the base tree ([`base_tree_gates`]).
    pub before: &'a Before,
}

/// Why the evidence directory could not be written. Fatal to the evidence (the run's verdict
/// stands).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EvidenceError {
    /// A file or directory of the evidence that cannot be read, created or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

impl EvidenceError {
    fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> EvidenceError {
        let path = path.into();
        move |source| EvidenceError::Io { path, source }
    }
}

/// Writes the evidence directory and returns the manifest's path.
pub fn write(dir: &Path, run: &RunEvidence<'_>) -> Result<PathBuf, EvidenceError> {
    std::fs::create_dir_all(dir).map_err(EvidenceError::io(dir))?;
    let mut artifacts = vec![run.tape.to_path_buf()];
    if let Some(diff) = &run.report.run.fs_diff {
        artifacts.push(put(dir, DIFF_FILE, diff.unified().as_bytes())?);
        let json = serde_json::to_vec_pretty(diff).expect("fs diffs serialize");
        artifacts.push(put(dir, DIFF_JSON_FILE, &json)?);
    }
    // An agent program's session, written there while it ran.
    for name in crate::command::SESSION_FILES {
        let path = dir.join(name);
        if run.scenario.eval().command.is_some() && path.is_file() {
            artifacts.push(path);
        }
    }
    for world in &run.report.worlds {
        let json = serde_json::to_vec_pretty(world).expect("world outcomes serialize");
        artifacts.push(put(dir, &format!("world-{}.json", world.server), &json)?);
    }
    let verdict = EvidenceVerdict {
        run: run.report.to_json(run.scenario.scenario().name()),
        scenario_sha256: run.scenario.scenario().digest(),
        reproduce: run.reproduce.to_string(),
        transcript: run.report.transcript.as_ref(),
    };
    artifacts.push(put(dir, VERDICT_FILE, to_json_pretty(&verdict).as_bytes())?);
    // Paths from the evidence directory, which the script enters first: it replays from
    // anywhere, and nothing in it is absolute.
    let replay = command_line(&[
        "simtape",
        "replay",
        &relative_from(dir, run.tape).display().to_string(),
        "--scenario",
        &relative_from(dir, run.scenario_path).display().to_string(),
    ]);
    let script = format!(
        "#!/bin/sh\n# Replays this run; the new tape must be byte-identical. Runs from any directory.\n\
         cd \"$(dirname \"$0\")\" || exit 2\n{replay}\n"
    );
    artifacts.push(put(dir, REPLAY_FILE, script.as_bytes())?);
    let manifest = manifest_json(run, &artifacts)?;
    let manifest = put(dir, MANIFEST_FILE, manifest.as_bytes())?;
    artifacts.push(manifest.clone());
    contract::write(dir, run, &artifacts, &replay, run.before)?;
    Ok(manifest)
}

/// Runs the gates of `eval` on its base tree, for the evidence's `failing_before`: when they
/// run in an agent program's working directory, the scenario runs once more at `seed` with
/// `true` standing in for the agent, so they run on an unchanged copy of the `[fs]` root.
/// Gates inside the simulation (a process replay, a WASI guest) have only their final run.
pub fn base_tree_gates(eval: &EvalScenario, seed: u64) -> Before {
    if !contract::gates_run_outside(eval) {
        return Err(NotRun::InsideSimulation);
    }
    let Some(noop) = on_path("true") else {
        return Err(NotRun::NoStandIn);
    };
    let mut builder = eval.builder(seed);
    let options = crate::command::CommandOptions {
        program: Some(noop),
        ..Default::default()
    };
    crate::command::run_eval(eval, &mut builder, &options)
        .map(|report| report.gates)
        .map_err(|source| NotRun::Failed {
            scenario: eval.scenario().path().to_path_buf(),
            source: Box::new(source),
        })
}

/// Returns the first `name` on PATH.
fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
}

/// Returns `target` as seen from the directory `dir` (`../scenarios/x.toml`); `target` as
/// given when either cannot be resolved.
fn relative_from(dir: &Path, target: &Path) -> PathBuf {
    let (Ok(dir), Ok(full)) = (dir.canonicalize(), target.canonicalize()) else {
        return target.to_path_buf();
    };
    let shared = dir
        .components()
        .zip(full.components())
        .take_while(|(a, b)| a == b)
        .count();
    let up = dir.components().skip(shared).map(|_| Component::ParentDir);
    let mut relative: PathBuf = up.collect();
    relative.extend(full.components().skip(shared));
    relative
}

fn manifest_json(run: &RunEvidence<'_>, artifacts: &[PathBuf]) -> Result<String, EvidenceError> {
    let mut files = Vec::new();
    for path in artifacts {
        let bytes = std::fs::read(path).map_err(EvidenceError::io(path))?;
        let name = path
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        files.push(ArtifactJson {
            file: name,
            bytes: bytes.len(),
            sha256: sha256_hex(&bytes),
        });
    }
    Ok(to_json_pretty(&EvidenceManifest {
        scenario: run.scenario.scenario().name().to_string(),
        seed: run.seed,
        artifacts: files,
    }))
}

fn put(dir: &Path, name: &str, bytes: &[u8]) -> Result<PathBuf, EvidenceError> {
    let path = dir.join(name);
    std::fs::write(&path, bytes).map_err(EvidenceError::io(&path))?;
    Ok(path)
}
