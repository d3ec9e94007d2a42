//! The main task of an eval run: the scripted tasks and the agent side by side, then the
//! verifiers, then the verdict.
//!
//! Both run inside the main task (no task of their own), polled in that order, so a
//! scenario without an agent leaves exactly the records [`simtape::scenario::Scenario::run`]
//! leaves. The first of them to fail stops the run at once; when both have finished, the
//! verifiers run, still inside the simulation, so what they read and run is on the tape.

use std::cell::RefCell;
use std::future::{poll_fn, Future};
use std::pin::pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::Poll;

use serde_json::Value;
use simtape::scenario::StepError;
use simtape::Host;

use crate::log::AgentEvent;
use simtape_eval::{Verdict, VerifierResult};

use crate::command::{AgentExit, CommandEnd, ProgramSessions, EXIT_VERIFIER};
use crate::ctx::{Ctx, RunState, Shared};
use crate::report::{AgentError, EvalFailure};
use crate::retry::Retries;

/// The main task's output (opaque: a report is made of it by the scenario).
#[derive(Debug)]
pub struct RunOutput {
    pub(crate) outcomes: Vec<(String, Value)>,
    pub(crate) verifiers: Vec<VerifierResult>,
    pub(crate) verdict: Verdict,
    pub(crate) failure: Option<EvalFailure>,
    pub(crate) harness: Option<simtape_eval::harness::HarnessOutcome>,
    /// The properties, once judged (empty when the run stopped first).
    pub(crate) properties: Vec<simtape_eval::property::PropertyResult>,
}

impl RunOutput {
    pub(crate) fn stopped(failure: EvalFailure, outcomes: Vec<(String, Value)>) -> RunOutput {
        RunOutput {
            outcomes,
            verifiers: Vec::new(),
            verdict: failure.verdict(),
            failure: Some(failure),
            harness: None,
            properties: Vec::new(),
        }
    }
}

/// The body of the main task. `program` is the driver's side of an agent program whose
/// sessions a `[harness]` runs; without it, the built-in agent works.
pub(crate) async fn run(
    host: Host,
    shared: Arc<Shared>,
    state: Rc<RunState>,
    program: Option<Rc<dyn ProgramSessions>>,
) -> RunOutput {
    *state.capabilities.borrow_mut() = Some(host.capabilities().clone());
    let ctx = Rc::new(Ctx {
        retries: Retries::new(shared.eval.agent.as_ref()),
        host,
        shared,
        state,
    });
    let tasks = ctx.shared.scenario.tasks(ctx.host.clone());
    let has_agent = ctx.shared.eval.agent.is_some() || program.is_some();
    let agent = has_agent.then(|| {
        let ctx = Rc::clone(&ctx);
        async move {
            let Some(spec) = &ctx.shared.eval.harness else {
                return crate::agent::run(ctx).await;
            };
            let worker = match program {
                Some(sessions) => crate::harness::Worker::Program(sessions),
                None => crate::harness::Worker::BuiltIn,
            };
            let ended = crate::harness::run(&ctx, spec, &worker).await?;
            *ctx.state.harness.borrow_mut() = Some(ended);
            Ok(())
        }
    });
    let outcomes = match join(tasks, agent).await {
        Ok(outcomes) => outcomes,
        Err(failure) => return RunOutput::stopped(failure, Vec::new()),
    };
    match crate::verify::run_all(&ctx, &outcomes).await {
        Ok(mut verifiers) => {
            // The harness's gate and invariants come first, then the scenario's own.
            let harness = ctx
                .state
                .harness
                .borrow_mut()
                .take()
                .map(|(results, outcome)| {
                    verifiers.splice(0..0, results);
                    outcome
                });
            judged(&ctx, outcomes, verifiers, harness).await
        }
        Err(error) => RunOutput::stopped(EvalFailure::Agent(error), outcomes),
    }
}

/// The body of the main task when the agent is a program outside the simulation: the
/// scripted tasks beside `agent` (the driver's side inside the simulation), then the
/// agent's exit check and the verifiers.
pub(crate) async fn run_command<A>(
    host: Host,
    shared: Arc<Shared>,
    state: Rc<RunState>,
    agent: A,
) -> RunOutput
where
    A: Future<Output = CommandEnd>,
{
    *state.capabilities.borrow_mut() = Some(host.capabilities().clone());
    let spec = shared
        .eval
        .command
        .clone()
        .expect("a command agent runs this pipeline");
    let ctx = Rc::new(Ctx {
        retries: Retries::new(None),
        host,
        shared,
        state,
    });
    let tasks = ctx.shared.scenario.tasks(ctx.host.clone());
    let exit = Rc::new(RefCell::new(None));
    let agent = {
        let (ctx, exit) = (Rc::clone(&ctx), Rc::clone(&exit));
        async move {
            let end = agent.await;
            *ctx.state.transcript.borrow_mut() = end.transcript;
            *ctx.state.gates.borrow_mut() = end.gates;
            if let Some(request) = end.unmatched {
                return Err(AgentError::Unmatched { request });
            }
            if let Some(reason) = end.sandbox_failed {
                return Err(AgentError::Sandbox { reason });
            }
            if let Some(denied) = end.denied {
                return Err(AgentError::NetDenied { denied });
            }
            if end.exit == AgentExit::TimedOut {
                return Err(AgentError::Timeout {
                    timeout_ms: spec.timeout_ms,
                });
            }
            *exit.borrow_mut() = Some((end.exit, spec.line));
            Ok(())
        }
    };
    let outcomes = match join(tasks, Some(agent)).await {
        Ok(outcomes) => outcomes,
        Err(failure) => return RunOutput::stopped(failure, Vec::new()),
    };
    let mut verifiers = Vec::new();
    if let Some((exit, line)) = exit.take() {
        let held = exit == AgentExit::Exited(0);
        let saw = format!("the agent {}", exit.describe());
        let event = AgentEvent::Verifier {
            name: EXIT_VERIFIER.to_string(),
            held,
            saw: saw.clone(),
        };
        ctx.record(event).await;
        verifiers.push(VerifierResult {
            name: EXIT_VERIFIER.to_string(),
            line,
            held,
            saw,
        });
    }
    match crate::verify::run_all(&ctx, &outcomes).await {
        Ok(more) => {
            verifiers.extend(more);
            judged(&ctx, outcomes, verifiers, None).await
        }
        Err(error) => RunOutput::stopped(EvalFailure::Agent(error), outcomes),
    }
}

/// The output of a run whose verifiers have run: its properties judged, and the verdict of
/// both.
async fn judged(
    ctx: &Ctx,
    outcomes: Vec<(String, Value)>,
    verifiers: Vec<VerifierResult>,
    harness: Option<simtape_eval::harness::HarnessOutcome>,
) -> RunOutput {
    match crate::property::judge(ctx, &outcomes, &verifiers).await {
        Ok(properties) => RunOutput {
            verdict: crate::property::verdict(&verifiers, &properties),
            outcomes,
            verifiers,
            failure: None,
            harness,
            properties,
        },
        Err(error) => RunOutput::stopped(EvalFailure::Agent(error), outcomes),
    }
}

/// Runs the scripted tasks and the agent (if any) until both finish; the first failure
/// wins at once.
async fn join<T, A>(tasks: T, agent: Option<A>) -> Result<Vec<(String, Value)>, EvalFailure>
where
    T: Future<Output = Result<Vec<(String, Value)>, Box<StepError>>>,
    A: Future<Output = Result<(), AgentError>>,
{
    let mut tasks = pin!(tasks);
    let mut agent = pin!(agent);
    let mut outcomes = None;
    let mut agent_done = agent.is_none();
    poll_fn(|cx| {
        if outcomes.is_none() {
            if let Poll::Ready(finished) = tasks.as_mut().poll(cx) {
                outcomes = Some(finished.map_err(|error| EvalFailure::from(*error))?);
            }
        }
        if !agent_done {
            let running = agent.as_mut().as_pin_mut().expect("a running agent");
            if let Poll::Ready(finished) = running.poll(cx) {
                agent_done = true;
                finished?;
            }
        }
        match (agent_done, outcomes.take()) {
            (true, Some(outcomes)) => Poll::Ready(Ok(outcomes)),
            (_, unfinished) => {
                outcomes = unfinished;
                Poll::Pending
            }
        }
    })
    .await
}
