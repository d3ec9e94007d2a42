//! Rerunning a tape's run with given decisions (`simtape shrink`, `simtape fork`): the
//! scenario unpacked from the tape, the run again at a seed with overrides, its tape written
//! as the original was (to compare bytes) or as a new run's.

use std::path::Path;
use std::sync::Arc;

use simtape::decision::{Decision, DecisionBook};
use simtape::tape::TapeReader;
use simtape_agent::{EvalReport, EvalScenario};
use simtape_eval::sweep::{Reason, SeedResult};

use super::files::read;
use super::inputs::{self, TapeInputs};
use crate::exit::{CliError, CliResult, Outcome};
use simtape_eval::reproduce::command_line;

/// Why a command that reruns a tape's run stopped before its end.
pub(crate) enum Stop {
    /// Bad input, or a file that cannot be read or written.
    Cli(CliError),
    /// A rerun that should have given the same run did not (exit 1).
    Differs(String),
}

impl From<CliError> for Stop {
    fn from(error: CliError) -> Stop {
        Stop::Cli(error)
    }
}

impl Stop {
    /// How the command ends: a `Differs` is printed and is a finding.
    pub(crate) fn ending(result: Result<(), Stop>, command: &str) -> CliResult {
        match result {
            Ok(()) => Ok(Outcome::Success),
            Err(Stop::Cli(error)) => Err(error),
            Err(Stop::Differs(why)) => {
                println!("{command}: {why}");
                Ok(Outcome::Finding)
            }
        }
    }
}

/// Reruns a tape's scenario with given decisions.
pub(crate) struct Rerun<'a> {
    pub(crate) eval: &'a EvalScenario,
    pub(crate) tape: &'a TapeInputs,
    /// The scenario's files as a new run's tape carries them. The tape's own inputs section
    /// also holds what its agent program sent and got, which a rerun would be held to.
    pub(crate) fresh: Arc<simtape::tape::Inputs>,
    pub(crate) agent_bin: Option<&'a Path>,
    /// The run's model instead of the scenario's `[llm]` (a fork recording from its branch
    /// point on).
    pub(crate) model: Option<simtape::cap::llm::LlmActor>,
}

/// Where a rerun's tape goes, and the decisions file's digest its header names.
pub(crate) enum TapeOut<'a> {
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
    pub(crate) fn run_at(
        &self,
        seed: u64,
        overrides: &[Decision],
        tape_out: TapeOut<'_>,
        branch: Option<simtape::tape::Branch>,
    ) -> Result<(EvalReport, Vec<Decision>), CliError> {
        let book = DecisionBook::new(overrides);
        let mut builder = match &self.model {
            Some(llm) => self.eval.builder_with_llm(seed, llm.clone()),
            None => self.eval.builder(seed),
        };
        let mut stamp = None;
        match tape_out {
            TapeOut::None => {}
            TapeOut::Again(path, digest) => {
                inputs::write_like(&mut builder, self.tape, path);
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
        let report = super::run_eval(
            self.eval,
            &mut builder,
            self.agent_bin,
            None,
            inputs::sandbox_of(&self.tape.header),
        )?;
        Ok((report, book.taken()))
    }

    /// [`Rerun::run_at`] the tape's own seed.
    pub(crate) fn run(
        &self,
        overrides: &[Decision],
        tape_out: TapeOut<'_>,
    ) -> Result<(EvalReport, Vec<Decision>), CliError> {
        self.run_at(self.tape.header.seed, overrides, tape_out, None)
    }

    /// Reruns the tape's own run (with the overrides its header carries) into `again` and
    /// checks it gives the tape back byte for byte: a run that does not depends on something
    /// its decisions do not hold, and cannot be rerun with other decisions.
    pub(crate) fn again(
        &self,
        original: &Path,
        again: &Path,
    ) -> Result<(EvalReport, Vec<Decision>), Stop> {
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
/// not, it stays, and the stop says `why` with the diff command that shows where they part.
pub(crate) fn same_tape(tape: &Path, again: &Path, why: &str) -> Result<(), Stop> {
    if read(tape)? != read(again)? {
        let diff = command_line(&[
            "simtape".into(),
            "diff".into(),
            tape.display().to_string(),
            again.display().to_string(),
        ]);
        return Err(Stop::Differs(format!("{why}; see {diff}")));
    }
    let _ = std::fs::remove_file(again);
    Ok(())
}

/// Why a run did not pass, as a sweep groups it; `None` for a pass.
pub(crate) fn reason(report: &EvalReport) -> Option<Reason> {
    let kind = report.failure.as_ref().map(|failure| failure.kind());
    SeedResult::of(&report.run.summary, &report.verdict, kind).reason
}

/// One record of a tape, where a branch can start: its index on the tape and what it is.
pub(crate) struct RecordAt {
    pub(crate) index: u64,
    pub(crate) t_ns: u64,
    pub(crate) actor: String,
    pub(crate) kind: &'static str,
}

impl std::fmt::Display for RecordAt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let t = simtape::time::format_ns(self.t_ns);
        write!(f, "t={t}, {} {}", self.actor, self.kind)
    }
}

/// The run's records on the tape at `path`, by ordinal (the count decisions use: checkpoints,
/// blobs and the footer are not the run's records).
pub(crate) fn records(path: &Path) -> Result<Vec<RecordAt>, CliError> {
    use simtape::tape::RecordKind;
    let tape_error = |error| CliError::Tape {
        path: Some(path.to_path_buf()),
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
