//! How a scenario run fails: a capability step's error ends the run, named by its task and
//! step, alongside the engine's own errors (deadlock, limits, panics).
//!
//! A failing step reports to [`FirstFailure`], which the main task watches while it joins the
//! tasks: the first failure wins and the main task returns at once, so a task still waiting
//! on the failed one cannot turn the failure into a deadlock.

use std::cell::RefCell;
use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Poll, Waker};

use crate::cap::fs::{FsDiff, FsError};
use crate::cap::llm::LlmError;
use crate::cap::net::NetError;
use crate::cap::process::ProcessError;
use crate::error::SimError;
use crate::executor::JoinHandle;
use crate::summary::RunSummary;

/// The error of one capability call, as the actor answered it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum CallError {
    /// A filesystem error: an escape from the root, a missing file, an injected fault.
    #[error(transparent)]
    Fs(#[from] FsError),
    /// A connection the network policy refused.
    #[error(transparent)]
    Net(#[from] NetError),
    /// A model call that no fixture entry matched, or that answered an HTTP error.
    #[error(transparent)]
    Llm(#[from] LlmError),
    /// A program run that failed: not covered (hermetic), diverged from or exhausted the
    /// process tape, or could not start. A non-zero exit status is not an error.
    #[error(transparent)]
    Process(#[from] ProcessError),
}

impl CallError {
    /// Returns the policy that refused the call, when one did: the network policy denied a
    /// connection (`net_denied`, also a model call in record mode whose host it denies), or
    /// a path left the overlay root (`fs_escape`). Such a stop is a verdict of its own
    /// (blocked), not an engine error.
    pub fn policy(&self) -> Option<&'static str> {
        match self {
            CallError::Net(NetError::Denied { .. }) => Some("net_denied"),
            CallError::Llm(LlmError::Denied(NetError::Denied { .. })) => Some("net_denied"),
            CallError::Fs(FsError::Escape { .. }) => Some("fs_escape"),
            _ => None,
        }
    }
}

/// A step whose capability call failed; it ends the run.
///
/// It displays as ``task "NAME" failed at step FIELD (`KIND`): ERROR``, where `FIELD` is the
/// step's field path in the scenario file, for example:
///
/// ```text
/// task "fetcher" failed at step task[0].steps[1] (`connect`): connection to example.com:443 denied: no rule allows it (rules: api.github.com)
/// ```
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("task {task:?} failed at step {step} (`{kind}`): {error}")]
pub struct StepError {
    /// The task's name.
    pub task: String,
    /// The step's field path, like `task[0].steps[1]`.
    pub step: String,
    /// The step's kind, like `connect`.
    pub kind: String,
    /// What the actor answered.
    pub error: CallError,
}

/// What ended a scenario run. Every variant is fatal to the run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ScenarioFailure {
    /// The engine stopped the run (deadlock, limit, task panic, tape, configuration).
    #[error(transparent)]
    Sim(#[from] SimError),
    /// A capability step failed.
    #[error(transparent)]
    Step(#[from] StepError),
    /// The run completed, but its filesystem diff could not be computed (the real directory
    /// changed under the run).
    #[error("the fs diff could not be computed: {0}")]
    FsDiff(FsError),
}

impl ScenarioFailure {
    /// Returns a short machine-readable name of the failure kind: the engine's kinds
    /// ([`SimError::kind`]), `step_failed` or `fs_diff`.
    pub fn kind(&self) -> &'static str {
        match self {
            ScenarioFailure::Sim(error) => error.kind(),
            ScenarioFailure::Step(_) => "step_failed",
            ScenarioFailure::FsDiff(_) => "fs_diff",
        }
    }

    /// Returns the policy that refused a scripted step, when one did
    /// ([`super::CallError::policy`]).
    pub fn policy(&self) -> Option<&'static str> {
        match self {
            ScenarioFailure::Step(error) => error.error.policy(),
            ScenarioFailure::Sim(_) | ScenarioFailure::FsDiff(_) => None,
        }
    }
}

/// A scenario run that ended in error, with what it produced before it stopped. The tape,
/// when there is one, is complete and its verdict is `error: <error>`.
#[derive(Debug, thiserror::Error)]
#[error("{error}")]
pub struct ScenarioRunError {
    /// What stopped the run.
    pub error: Box<ScenarioFailure>,
    /// The seed, time, counts and tape as far as the run got (boxed: it keeps the error
    /// small).
    pub summary: Box<RunSummary>,
    /// The filesystem diff up to the failure, when the scenario has `[fs]` and it could be
    /// computed (boxed: it is large, and most failures have none).
    pub fs_diff: Option<Box<FsDiff>>,
}

/// The first step failure of a run, and the main task's waker to tell it.
#[derive(Debug, Default, Clone)]
pub(crate) struct FirstFailure {
    state: Rc<RefCell<FailureState>>,
}

#[derive(Debug, Default)]
struct FailureState {
    first: Option<Box<StepError>>,
    waker: Option<Waker>,
}

impl FirstFailure {
    /// Records a failure; the first one wins and wakes the main task.
    pub(crate) fn report(&self, error: Box<StepError>) {
        let mut state = self.state.borrow_mut();
        if state.first.is_none() {
            state.first = Some(error);
            if let Some(waker) = state.waker.take() {
                waker.wake();
            }
        }
    }

    /// Waits for the task of `handle` to end, or for any task to fail, whichever is first.
    pub(crate) async fn join(&self, mut handle: JoinHandle<()>) -> Result<(), Box<StepError>> {
        poll_fn(|cx| {
            if let Some(error) = self.state.borrow_mut().first.take() {
                return Poll::Ready(Err(error));
            }
            self.state.borrow_mut().waker = Some(cx.waker().clone());
            // Polled last, so a deadlock report shows what the join awaits, as before.
            Pin::new(&mut handle).poll(cx).map(|joined| {
                joined.expect("scenario tasks are never aborted");
                Ok(())
            })
        })
        .await
    }

    /// Returns the failure, if a task reported one after the last join.
    pub(crate) fn take(&self) -> Option<Box<StepError>> {
        self.state.borrow_mut().first.take()
    }
}
