//! A tape's run again with given decisions (`simtape shrink`, `fork`, `explain`): the
//! scenario unpacked from the tape, the run again at a seed with overrides, its tape written
//! as the original was (to compare bytes) or as a new run's.
//!
//! - [`tape_inputs`] — a tape's header, verdict and inputs; unpacking them; writing a tape
//!   as another was written.

pub mod tape_inputs;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use simtape::decision::{Decision, DecisionBook};
use simtape::scenario::InputsError;
use simtape::tape::{Branch, RecordKind, TapeError, TapeReader};
use simtape_agent::{EvalReport, EvalScenario};
use simtape_eval::reproduce::command_line;
use simtape_eval::sweep::{Reason, SeedResult};

use crate::command::{run_eval, CommandOptions};
use crate::ServeError;
use tape_inputs::TapeInputs;

/// Why a rerun, or what it needs, did not go through.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RerunError {
    /// A tape that cannot be read.
    #[error("{}: {error}", path.display())]
    Tape {
        /// The tape file.
        path: PathBuf,
        /// What is wrong with it.
        error: TapeError,
    },
    /// A file that cannot be read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The scenario source a tape carries is not the one its digest names.
    #[error("the scenario source embedded in the tape does not match its digest")]
    ScenarioDigest,
    /// The tape's inputs could not be written out.
    #[error("{}: {error}", dir.display())]
    Unpack {
        /// Where they were to go.
        dir: PathBuf,
        /// Why they could not.
        error: InputsError,
    },
    /// The run could not start (its agent program cannot be found or started).
    #[error("{}: {error}", scenario.display())]
    Run {
        /// The scenario.
        scenario: PathBuf,
        /// Why.
        error: ServeError,
    },
    /// A rerun that should have given the same tape did not: the reason, with the diff
    /// command that shows where the two part.
    #[error("{0}")]
    Differs(String),
}

/// Reruns a tape's scenario with given decisions.
#[derive(Debug)]
pub struct Rerun<'a> {
    /// The scenario, loaded from the tape's inputs.
    pub eval: &'a EvalScenario,
    /// The tape it came from.
    pub tape: &'a TapeInputs,
    /// The scenario's files as a new run's tape carries them. The tape's own inputs section
    /// also holds what its agent program sent and got, which a rerun would be held to.
    pub fresh: Arc<simtape::tape::Inputs>,
    /// The agent program instead of the scenario's, when given.
    pub agent_bin: Option<&'a Path>,
    /// The run's model instead of the scenario's `[llm]` (a fork recording from its branch
    /// point on).
    pub model: Option<simtape::cap::llm::LlmActor>,
}

/// Where a rerun's tape goes, and the decisions file's digest its header names.
#[derive(Debug)]
pub enum TapeOut<'a> {
    /// No tape (a step of a search).
    None,
    /// The tape's own run again: written as the tape was, to give the same bytes.
    Again(&'a Path, Option<String>),
    /// Another run: its tape carries the scenario's files.
    New(&'a Path, Option<String>),
}

impl Rerun<'_> {
    /// Runs at `seed` with `overrides`, writing a tape when asked (stamped with a decisions
    /// file's digest when given, and `branch` when forked); returns the report and every
    /// decision the run took.
    pub fn run_at(
        &self,
        seed: u64,
        overrides: &[Decision],
        tape_out: TapeOut<'_>,
        branch: Option<Branch>,
    ) -> Result<(EvalReport, Vec<Decision>), RerunError> {
        let book = DecisionBook::new(overrides);
        let mut builder = match &self.model {
            Some(llm) => self.eval.builder_with_llm(seed, llm.clone()),
            None => self.eval.builder(seed),
        };
        let mut stamp = None;
        match tape_out {
            TapeOut::None => {}
            TapeOut::Again(path, digest) => {
                tape_inputs::write_like(&mut builder, self.tape, path);
                stamp = digest;
            }
            TapeOut::New(path, digest) => {
                builder.tape(path).inputs(Arc::clone(&self.fresh));
                stamp = digest;
            }
        }
        builder.decisions(Arc::clone(&book), stamp);
        if let Some(branch) = branch {
            builder.branch(branch);
        }
        let options = CommandOptions {
            program: self.agent_bin.map(Path::to_path_buf),
            sandbox: tape_inputs::sandbox_of(&self.tape.header),
            ..Default::default()
        };
        let report =
            run_eval(self.eval, &mut builder, &options).map_err(|error| RerunError::Run {
                scenario: self.eval.scenario().path().to_path_buf(),
                error,
            })?;
        Ok((report, book.taken()))
    }

    /// [`Rerun::run_at`] the tape's own seed.
    pub fn run(
        &self,
        overrides: &[Decision],
        tape_out: TapeOut<'_>,
    ) -> Result<(EvalReport, Vec<Decision>), RerunError> {
        self.run_at(self.tape.header.seed, overrides, tape_out, None)
    }

    /// Reruns the tape's own run (with the overrides its header carries) into `again` and
    /// checks it gives the tape back byte for byte: a run that does not depends on something
    /// its decisions do not hold, and cannot be rerun with other decisions.
    pub fn again(
        &self,
        original: &Path,
        again: &Path,
    ) -> Result<(EvalReport, Vec<Decision>), RerunError> {
        let header = &self.tape.header;
        let overrides = header
            .decisions
            .as_ref()
            .map(|stamp| stamp.overrides.clone())
            .unwrap_or_default();
        let stamp = header.decisions.as_ref().map(|stamp| stamp.digest.clone());
        let branch = header
            .decisions
            .as_ref()
            .and_then(|stamp| stamp.branch.clone());
        let ran = self.run_at(
            header.seed,
            &overrides,
            TapeOut::Again(again, stamp),
            branch,
        )?;
        same_tape(
            original,
            again,
            &format!(
                "rerun 1 of {} did not give its tape again: the run depends on something its \
                 decisions do not hold",
                original.display()
            ),
        )?;
        Ok(ran)
    }
}

/// Checks that the rerun's tape `again` has the bytes of `tape`, and removes it; when it does
/// not, it stays, and the error says `why` with the diff command that shows where they part.
/// The two are compared a block at a time, so a tape of any size takes constant memory.
pub fn same_tape(tape: &Path, again: &Path, why: &str) -> Result<(), RerunError> {
    if !same_bytes(tape, again)? {
        let diff = command_line(&[
            "simtape".into(),
            "diff".into(),
            tape.display().to_string(),
            again.display().to_string(),
        ]);
        return Err(RerunError::Differs(format!("{why}; see {diff}")));
    }
    let _ = std::fs::remove_file(again);
    Ok(())
}

/// Whether the files at `a` and `b` hold the same bytes: the lengths first, then a block at
/// a time (a tape can be large; neither is read whole).
fn same_bytes(a: &Path, b: &Path) -> Result<bool, RerunError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| RerunError::Io { path, source }
    };
    let open = |path: &Path| {
        let file = std::fs::File::open(path).map_err(io(path))?;
        let len = file.metadata().map_err(io(path))?.len();
        Ok::<_, RerunError>((file, len))
    };
    let ((mut left, len), (mut right, right_len)) = (open(a)?, open(b)?);
    if len != right_len {
        return Ok(false);
    }
    let (mut left_block, mut right_block) = (vec![0u8; 1 << 16], vec![0u8; 1 << 16]);
    let mut left_over = len;
    while left_over > 0 {
        let n = usize::try_from(left_over).map_or(left_block.len(), |n| n.min(left_block.len()));
        // A file that shrinks between the length and the read fails here, with its path.
        left.read_exact(&mut left_block[..n]).map_err(io(a))?;
        right.read_exact(&mut right_block[..n]).map_err(io(b))?;
        if left_block[..n] != right_block[..n] {
            return Ok(false);
        }
        left_over -= n as u64;
    }
    Ok(true)
}

/// Why a run did not pass, as a sweep groups it; `None` for a pass.
pub fn reason(report: &EvalReport) -> Option<Reason> {
    let kind = report.failure.as_ref().map(|failure| failure.kind());
    SeedResult::of(&report.run.summary, &report.verdict, kind).reason
}

/// One record of a tape, where a branch can start: its index on the tape and what it is.
#[derive(Debug)]
pub struct RecordAt {
    /// Its index on the tape.
    pub index: u64,
    /// Its virtual time.
    pub t_ns: u64,
    /// The actor that wrote it.
    pub actor: String,
    /// Its kind's name.
    pub kind: &'static str,
}

impl std::fmt::Display for RecordAt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let t = simtape::time::format_ns(self.t_ns);
        write!(f, "t={t}, {} {}", self.actor, self.kind)
    }
}

/// The run's records on the tape at `path`, by ordinal (the count decisions use: checkpoints,
/// blobs and the footer are not the run's records).
pub fn records(path: &Path) -> Result<Vec<RecordAt>, RerunError> {
    let tape_error = |error| RerunError::Tape {
        path: path.to_path_buf(),
        error,
    };
    let mut reader = TapeReader::open(path).map_err(tape_error)?;
    let mut records = Vec::new();
    while let Some(record) = reader.next_record().map_err(tape_error)? {
        if matches!(
            record.kind,
            RecordKind::Checkpoint | RecordKind::Blob | RecordKind::Footer
        ) {
            continue;
        }
        records.push(RecordAt {
            index: record.index,
            t_ns: record.t_ns,
            actor: reader.actor_name(record.actor).to_string(),
            kind: record.kind.name(),
        });
    }
    Ok(records)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_bytes_compares_block_by_block() {
        // Goal: equal files are the same across block boundaries; a file that only adds bytes
        // at the end, or differs in one byte past the first block, is not.
        let dir = std::env::temp_dir().join(format!("simtape-same-bytes-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let body: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        let write = |name: &str, bytes: &[u8]| {
            let path = dir.join(name);
            std::fs::write(&path, bytes).unwrap();
            path
        };
        let a = write("a", &body);
        let b = write("b", &body);
        let mut longer = body.clone();
        longer.push(0);
        let c = write("c", &longer);
        let mut changed = body.clone();
        changed[100_000] ^= 1;
        let d = write("d", &changed);
        assert!(same_bytes(&a, &b).unwrap());
        assert!(!same_bytes(&a, &c).unwrap());
        assert!(!same_bytes(&c, &a).unwrap());
        assert!(!same_bytes(&a, &d).unwrap());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
