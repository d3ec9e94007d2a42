//! Multi-session runs (`[harness]`): an initializer session, then task sessions, each a fresh
//! conversation of the built-in agent, or a fresh process of an agent program, on one or more
//! pending features, until the completion gate holds or a limit stops the run. All inside one
//! simulation: one seed, one tape.
//!
//! ```text
//! initialize: manifest, feature_list.json, progress.log, checkpoint 0   (idempotent)
//! for session in 1..=max_runs:
//!     bearings: read the manifest and the feature list; after a crashed session, note the
//!               crash and resume from the last checkpoint; run the health check
//!     select:   pending features (the selector; 1 in strict mode, ≤ max_features_per_run)
//!     work:     the agent, a fresh conversation, ≤ max_turns_per_run turns (a task of its own)
//!               (an agent program: one process, through `ProgramSessions`)
//!     validate: each feature, by the validator (a task of its own)
//!     record:   mark passing only when validated; progress line; checkpoint
//!     check:    the invariants; the gate: every required feature passing
//! ```
//!
//! The session's work and its validation run in tasks named after the session and its
//! features (`session 2: add`, `session 2 validation: add`), so every record they leave on the
//! tape (model calls, tool calls, fs operations) says which session and feature it belongs to.
//!
//! The seeded faults ([`policy::HarnessFaults`]): a crash kills a session part-way (during its
//! turns, or between its work and the validation) and leaves no checkpoint; the next session
//! resumes from the last one. A flaky health check fails a session once. The invariants
//! (`invariants.rs`) are checked after every session; each broken one is a named FAIL.

mod invariants;
// The harness's data (its policy, parts, state files and errors) sits below the run's
// context, which holds it; this module, which runs it, sits above.
pub use crate::harness_spec::{error, files, parts, policy};

use std::collections::BTreeSet;
use std::rc::Rc;

use simtape::cap::fs::FsHandle;
use simtape::rng::RngStream;
use simtape_eval::harness::HarnessOutcome;
use simtape_eval::VerifierResult;

pub use error::HarnessError;
use files::{
    Checkpoint, FeatureList, Manifest, StateError, Validation, CHECKPOINTS, FEATURE_LIST, MANIFEST,
    MANIFEST_VERSION, PROGRESS, VALIDATIONS,
};
use invariants::{check_invariants, Book, Stop, INVARIANT_RESUME};
use parts::{HarnessCx, Health, PartRun, Validated, VerifyFuture};
use policy::{Feature, HarnessMode, HarnessSpec, MarkOrder, ResumeFrom};

use crate::command::{AgentExit, ProgramSessions, SessionEnd, SessionRequest};
use crate::ctx::Ctx;
use crate::log::AgentEvent;
use crate::report::AgentError;
use crate::transcript::{EndReason, TranscriptSession};

impl PartRun for Rc<Ctx> {
    fn host(&self) -> &simtape::Host {
        &self.host
    }

    fn verify<'a>(&'a self, verifiers: &'a [crate::spec::VerifySpec]) -> VerifyFuture<'a> {
        Box::pin(crate::verify::run_list(self, verifiers, &[]))
    }
}

/// Who does a session's work.
pub(crate) enum Worker {
    /// The built-in agent loop, inside the simulation.
    BuiltIn,
    /// An agent program, one process per session, through its driver.
    Program(Rc<dyn ProgramSessions>),
}

/// What a session's work came to, when it did not stop the run.
enum Worked {
    /// The agent ended (it answered, or ran out of turns or retries).
    Ended(EndReason),
    /// The session failed without its work: a model error no retry absorbed, or an agent
    /// program that exited non-zero. `chat` fails fast.
    Failed {
        /// How the transcript's section ends (`model error`).
        ended: String,
        /// The checkpoint's note.
        note: String,
    },
}

/// Runs `spec` with `worker` doing each session's work; the results are the harness's
/// verifiers (the invariants and the gate), the outcome what reports count.
// Long because: the session loop (initialize, health check, work, checkpoint, gate) shares
// the progress log, the feature list, the book of invariants and the budgets across steps,
// and each step may end the run; read as one loop, the order of the steps is the policy.
pub(crate) async fn run(
    ctx: &Rc<Ctx>,
    spec: &HarnessSpec,
    worker: &Worker,
) -> Result<(Vec<VerifierResult>, HarnessOutcome), AgentError> {
    let eval = &ctx.shared.eval;
    let objective = match (&eval.agent, &eval.command) {
        (Some(agent), _) => agent.task.clone(),
        (None, Some(command)) => command.task.clone(),
        // Loading refuses a harness without an agent (`check`, and `check_parts` for parts
        // given in Rust); should the two ever disagree, the run fails, it does not panic.
        (None, None) => {
            return Err(AgentError::Setup(
                "a [harness] needs an [agent] to work its sessions".into(),
            ))
        }
    };
    let present = ctx.host.capabilities().fs().is_some();
    ctx.require(present, "a [harness]'s state files", "[fs]")?;
    let fs = ctx.host.fs();
    let mut rng = ctx.host.rng("harness");
    let policy = &spec.policy;
    let mut book = Book::default();
    let mut outcome = HarnessOutcome::default();
    let fail = |error: HarnessError| AgentError::Harness(Box::new(error));
    let state = |error: StateError| fail(HarnessError::Memory(error));

    ctx.record(AgentEvent::Session {
        session: 0,
        phase: "initializer".into(),
        features: spec.features.iter().map(|f| f.id.clone()).collect(),
    })
    .await;
    section(ctx, 0, Vec::new(), "initialized");
    initialize(&fs, &objective, spec).await.map_err(state)?;
    book.progress = files::read_text(&fs, PROGRESS).await.map_err(state)?;

    let mut failures = 0;
    let stop = loop {
        let session = outcome.sessions + 1;
        if session > policy.max_runs {
            break Stop::RunsSpent;
        }
        outcome.sessions = session;
        let list = match bearings(ctx, &fs, spec, session, &mut book).await {
            Ok(list) => list,
            Err(stop) => break stop,
        };
        let cx = HarnessCx::new(ctx, session);
        let flaked = policy
            .faults
            .health_check_flake
            .is_some_and(|ratio| rng.chance(ratio));
        let health = if flaked {
            Health::Failed("the health check flaked (seeded fault)".into())
        } else {
            spec.parts.health.check(&cx).await.map_err(fail)?
        };
        if let Health::Failed(why) = health {
            let note = format!("health check failed: {why}");
            ctx.record(AgentEvent::HealthCheck {
                session,
                held: false,
                saw: why,
            })
            .await;
            if policy.fail_fast.health_check {
                break Stop::FailFast(note);
            }
            section(ctx, session, Vec::new(), "failed: health check");
            checkpoint(ctx, &fs, session, &[], &list, "failed", &note)
                .await
                .map_err(state)?;
            failures += 1;
            outcome.wasted += 1;
            if failures > policy.retry_budget {
                break Stop::RetriesSpent;
            }
            continue;
        }
        let picked = select(&list, spec, &mut rng);
        if picked.is_empty() {
            break if list.complete() {
                Stop::Done
            } else {
                Stop::RunsSpent
            };
        }
        let ids: Vec<String> = picked.iter().map(|f| f.id.clone()).collect();
        ctx.record(AgentEvent::Session {
            session,
            phase: "task".into(),
            features: ids.clone(),
        })
        .await;
        section(ctx, session, ids.clone(), "");
        // The crash fault: a turn of the session, or the gap between work and validation.
        let turns = policy.max_turns_per_run;
        let crash_at = match policy.faults.crash {
            Some(ratio) if rng.chance(ratio) => Some(rng.range_inclusive(1, u64::from(turns) + 1)),
            _ => None,
        };
        let cap = match crash_at {
            Some(turn) if turn <= u64::from(turns) => turn as u32,
            _ => turns,
        };
        let task = session_task(&objective, &picked);
        ctx.retries.refill();
        let ended_by = match work(ctx, worker, session, &ids, task, cap).await? {
            Worked::Ended(end) => end,
            Worked::Failed { ended, note } => {
                end_section(ctx, &format!("failed: {ended}"));
                if policy.fail_fast.chat {
                    break Stop::FailFast(note);
                }
                checkpoint(ctx, &fs, session, &ids, &list, "failed", &note)
                    .await
                    .map_err(state)?;
                outcome.wasted += 1;
                if spent(&fs, session, &mut book, &mut failures, policy.retry_budget).await {
                    break Stop::RetriesSpent;
                }
                continue;
            }
        };
        // A session the crash kills during its turns ends there; one killed after its work
        // has done that work, and a harness that marks before validating has marked it.
        let killed_at_turn = crash_at.filter(|turn| *turn <= u64::from(turns));
        let mut list = list;
        if killed_at_turn.is_none() && policy.mark == MarkOrder::BeforeValidation {
            for id in &ids {
                list.mark(id);
            }
            files::write_json(&fs, FEATURE_LIST, &list)
                .await
                .map_err(state)?;
        }
        if crash_at.is_some() {
            let at = match killed_at_turn {
                Some(turn) => format!("turn {turn}"),
                None => "before validation".into(),
            };
            let ended = match killed_at_turn {
                Some(_) => format!("crashed at {at}"),
                None => format!("crashed {at}"),
            };
            end_section(ctx, &ended);
            crashed(ctx, session, at, &mut book, &mut outcome).await;
            if spent(&fs, session, &mut book, &mut failures, policy.retry_budget).await {
                break Stop::RetriesSpent;
            }
            continue;
        }
        let validated = validate(ctx, spec, session, &picked).await.map_err(fail)?;
        let mut all_held = true;
        let mut notes = Vec::new();
        for (feature, Validated { held, saw }) in picked.iter().zip(validated) {
            let record = Validation {
                session,
                feature: feature.id.clone(),
                held,
                saw: saw.clone(),
            };
            files::append_json(&fs, VALIDATIONS, &record)
                .await
                .map_err(state)?;
            if held {
                book.validated.insert(feature.id.clone());
                if policy.mark == MarkOrder::AfterValidation {
                    list.mark(&feature.id);
                }
                notes.push(format!("{}: validated", feature.id));
            } else {
                all_held = false;
                notes.push(format!("{}: not validated ({saw})", feature.id));
            }
        }
        files::write_json(&fs, FEATURE_LIST, &list)
            .await
            .map_err(state)?;
        let note = notes.join("; ");
        files::append(&fs, PROGRESS, &format!("session {session}: {note}"))
            .await
            .map_err(state)?;
        let status = if all_held { "succeeded" } else { "failed" };
        match ended_by {
            EndReason::FinalAnswer => end_section(ctx, status),
            other => end_section(ctx, &format!("{status}, agent ended by {}", other.label())),
        }
        checkpoint(ctx, &fs, session, &ids, &list, status, &note)
            .await
            .map_err(state)?;
        check_invariants(&fs, session, &mut book).await;
        if !all_held {
            failures += 1;
            outcome.wasted += 1;
            if policy.fail_fast.validation {
                break Stop::FailFast(format!("session {session}: {note}"));
            }
            if failures > policy.retry_budget {
                break Stop::RetriesSpent;
            }
        }
        if list.complete() {
            break Stop::Done;
        }
    };

    let list: FeatureList = files::read_json(&fs, FEATURE_LIST)
        .await
        .ok()
        .flatten()
        .unwrap_or_else(|| FeatureList::fresh(&spec.features));
    outcome.features = list
        .features
        .iter()
        .map(|e| (e.id.clone(), e.passes))
        .collect();
    // Done is the gate as it truly stands: every required feature passing, each with a held
    // validation (a feature marked passing without one does not count).
    let unvalidated: Vec<String> = list
        .features
        .iter()
        .filter(|e| e.required && e.passes && !book.validated.contains(&e.id))
        .map(|e| e.id.clone())
        .collect();
    outcome.done = matches!(stop, Stop::Done) && list.complete() && unvalidated.is_empty();
    outcome.broken = book.broken.keys().next().map(|name| name.to_string());
    let results = invariants::results(&stop, &outcome, &unvalidated, &book, spec, ctx).await;
    Ok((results, outcome))
}

/// Writes the initial state unless a manifest is there already: a second initializer run on
/// an initialized session changes nothing.
async fn initialize(fs: &FsHandle, objective: &str, spec: &HarnessSpec) -> Result<(), StateError> {
    if files::read(fs, MANIFEST).await?.is_some() {
        return Ok(());
    }
    match fs.create_dir(".harness").await {
        Ok(()) | Err(simtape::cap::fs::FsError::AlreadyExists { .. }) => {}
        Err(error) => {
            return Err(StateError::Fs {
                path: MANIFEST,
                error,
            })
        }
    }
    let manifest = Manifest {
        version: MANIFEST_VERSION,
        objective: objective.to_owned(),
        mode: spec.policy.mode,
        features: spec.features.iter().map(|f| f.id.clone()).collect(),
    };
    files::write_json(fs, FEATURE_LIST, &FeatureList::fresh(&spec.features)).await?;
    files::append(fs, PROGRESS, "session 0: initialized").await?;
    let first = Checkpoint {
        session: 0,
        features: Vec::new(),
        passing: Vec::new(),
        status: "succeeded".into(),
        note: "initialized".into(),
    };
    files::append_json(fs, CHECKPOINTS, &first).await?;
    // The manifest last: it marks the initialization complete.
    files::write_json(fs, MANIFEST, &manifest).await
}

/// Gets a session's bearings: the manifest (initialized?), the feature list, and after a
/// crashed session the last checkpoint, which the session resumes from. A state the agent
/// made unreadable stops the run there; the invariant that reads it names why.
async fn bearings(
    ctx: &Ctx,
    fs: &FsHandle,
    spec: &HarnessSpec,
    session: u32,
    book: &mut Book,
) -> Result<FeatureList, Stop> {
    let halt = |error: HarnessError| Stop::Halted(error.to_string());
    let not_ready = |why: String| halt(HarnessError::NotReady(why));
    match files::read_json::<Manifest>(fs, MANIFEST).await {
        Ok(Some(manifest)) if manifest.version == MANIFEST_VERSION => {}
        Ok(Some(manifest)) => {
            return Err(not_ready(format!(
                "{MANIFEST} has version {}, expected {MANIFEST_VERSION}",
                manifest.version
            )))
        }
        Ok(None) => return Err(not_ready(format!("{MANIFEST} is gone"))),
        Err(error) => return Err(not_ready(error.to_string())),
    }
    let read = files::read_json::<FeatureList>(fs, FEATURE_LIST).await;
    let mut list = match read {
        Ok(list) => list.unwrap_or_else(|| FeatureList::fresh(&spec.features)),
        Err(error) => return Err(halt(HarnessError::Memory(error))),
    };
    if !book.crashed.contains(&(session - 1)) {
        return Ok(list);
    }
    let checkpoints = files::read_lines::<Checkpoint>(fs, CHECKPOINTS).await;
    let last = match checkpoints {
        Ok(checkpoints) => checkpoints.last().cloned(),
        Err(error) => return Err(halt(HarnessError::Memory(error))),
    };
    let (from, passing) = last.map_or((0, Vec::new()), |c| (c.session, c.passing));
    let note = format!(
        "session {}: crashed; session {session} resumes from checkpoint of session {from}",
        session - 1
    );
    let resumed = files::append(fs, PROGRESS, &note).await;
    resumed.map_err(|error| halt(HarnessError::Memory(error)))?;
    if spec.policy.resume == ResumeFrom::LastCheckpoint {
        list.restore(&passing);
        let written = files::write_json(fs, FEATURE_LIST, &list).await;
        written.map_err(|error| halt(HarnessError::Memory(error)))?;
    }
    // The session starts from what the checkpoint says passed, and nothing else.
    let now: Vec<&str> = list.passing().collect();
    if now != passing.iter().map(String::as_str).collect::<Vec<_>>() {
        book.broke(
            INVARIANT_RESUME,
            format!(
                "session {session} started with {} passing, the checkpoint of session {from} with {}",
                names(&now),
                names(&passing.iter().map(String::as_str).collect::<Vec<_>>())
            ),
        );
    }
    ctx.record(AgentEvent::Resume {
        session,
        checkpoint: from,
    })
    .await;
    Ok(list)
}

/// Names a list of features for a message (`none` when empty).
fn names(ids: &[&str]) -> String {
    if ids.is_empty() {
        "none".into()
    } else {
        ids.join(", ")
    }
}

/// Returns the pending features a session takes on, in order.
fn select<'a>(list: &FeatureList, spec: &'a HarnessSpec, rng: &mut RngStream) -> Vec<&'a Feature> {
    let passing: BTreeSet<&str> = list.passing().collect();
    let mut pending: Vec<&Feature> = spec
        .features
        .iter()
        .filter(|f| !passing.contains(f.id.as_str()))
        .collect();
    // Stable: equal priorities keep file order.
    pending.sort_by_key(|f| f.priority);
    let policy = &spec.policy;
    let limit = match policy.mode {
        HarnessMode::StrictIncremental => 1,
        HarnessMode::BoundedBatch => policy.max_features_per_run as usize,
        HarnessMode::UnlimitedBatch => pending.len(),
    };
    spec.parts.selector.select(pending, limit, rng)
}

/// The task of a session: the objective, the features it takes on, where the state is.
fn session_task(objective: &str, features: &[&Feature]) -> String {
    let mut task = format!("{objective}\n\nThis session's work:");
    for feature in features {
        task.push_str(&format!(
            "\n- feature {}: {}",
            feature.id, feature.description
        ));
    }
    task.push_str(&format!(
        "\n\n{FEATURE_LIST} and {PROGRESS} say where the work stands."
    ));
    task
}

/// Runs the session's work in a task of its own, named after the session and its features.
async fn work(
    ctx: &Rc<Ctx>,
    worker: &Worker,
    session: u32,
    ids: &[String],
    task: String,
    max_turns: u32,
) -> Result<Worked, AgentError> {
    let owned = Rc::clone(ctx);
    let future: std::pin::Pin<Box<dyn std::future::Future<Output = _>>> = match worker {
        Worker::BuiltIn => Box::pin(async move {
            match crate::agent::session(&owned, &task, max_turns).await {
                Ok(end) => Ok(Worked::Ended(end)),
                Err(AgentError::Model { turn, error }) => Ok(Worked::Failed {
                    ended: "model error".into(),
                    note: format!("model error at turn {turn}: {error}"),
                }),
                Err(other) => Err(other),
            }
        }),
        Worker::Program(sessions) => {
            let request = SessionRequest {
                session,
                features: ids.to_vec(),
                task,
                max_turns,
            };
            let ended = sessions.session(request);
            Box::pin(async move { program_session(&owned, ended.await) })
        }
    };
    let name = format!("session {session}: {}", ids.join(","));
    ctx.host
        .spawn(&name, future)
        .await
        .expect("harness session tasks are never aborted")
}

/// Folds an agent program's session into the run's transcript and says what it came to.
fn program_session(ctx: &Ctx, end: SessionEnd) -> Result<Worked, AgentError> {
    let mut transcript = ctx.state.transcript.borrow_mut();
    for mut turn in end.transcript.turns {
        turn.turn = u32::try_from(transcript.turns.len() + 1).unwrap_or(u32::MAX);
        transcript.turns.push(turn);
    }
    transcript.retries = transcript.retries.saturating_add(end.transcript.retries);
    transcript.answer = end.transcript.answer;
    transcript.end = end.transcript.end;
    drop(transcript);
    if let Some(request) = end.unmatched {
        return Err(AgentError::Unmatched { request });
    }
    if let Some(reason) = end.sandbox_failed {
        return Err(AgentError::Sandbox { reason });
    }
    if let Some(denied) = end.denied {
        return Err(AgentError::NetDenied { denied });
    }
    match end.exit {
        // Stopped at its turn budget (or where a seeded crash kills it): as the built-in
        // agent's session, it ran out of turns.
        _ if end.turns_spent => Ok(Worked::Ended(EndReason::MaxTurns)),
        AgentExit::Exited(0) => Ok(Worked::Ended(EndReason::FinalAnswer)),
        AgentExit::TimedOut => {
            let timeout_ms = ctx.shared.eval.command.as_ref().map_or(0, |c| c.timeout_ms);
            Err(AgentError::Timeout { timeout_ms })
        }
        // The section says what ended it, the note says how, as for a model error.
        other => Ok(Worked::Failed {
            ended: "agent exit".into(),
            note: format!("the agent {}", other.describe()),
        }),
    }
}

/// Validates each of `picked` in a task of its own, in order.
async fn validate(
    ctx: &Rc<Ctx>,
    spec: &HarnessSpec,
    session: u32,
    picked: &[&Feature],
) -> Result<Vec<Validated>, HarnessError> {
    let owned = Rc::clone(ctx);
    let validator = std::sync::Arc::clone(&spec.parts.validator);
    let features: Vec<Feature> = picked.iter().map(|f| (*f).clone()).collect();
    let ids: Vec<&str> = picked.iter().map(|f| f.id.as_str()).collect();
    let name = format!("session {session} validation: {}", ids.join(","));
    let future = Box::pin(async move {
        let cx = HarnessCx::new(&owned, session);
        let mut validated = Vec::with_capacity(features.len());
        for feature in &features {
            validated.push(validator.validate(&cx, feature).await?);
        }
        Ok(validated)
    });
    ctx.host
        .spawn(&name, future)
        .await
        .expect("harness validation tasks are never aborted")
}

/// Opens the transcript's section of a session.
fn section(ctx: &Ctx, session: u32, features: Vec<String>, ended: &str) {
    let mut transcript = ctx.state.transcript.borrow_mut();
    let first_turn = transcript.turns.len();
    transcript.sessions.push(TranscriptSession {
        session,
        features,
        first_turn,
        ended: ended.into(),
    });
}

/// Says how the transcript's last section ended.
fn end_section(ctx: &Ctx, ended: &str) {
    if let Some(last) = ctx.state.transcript.borrow_mut().sessions.last_mut() {
        last.ended = ended.into();
    }
}

/// Writes a checkpoint (with what passes as `list` says) and puts it on the tape.
async fn checkpoint(
    ctx: &Ctx,
    fs: &FsHandle,
    session: u32,
    features: &[String],
    list: &FeatureList,
    status: &str,
    note: &str,
) -> Result<(), StateError> {
    let record = Checkpoint {
        session,
        features: features.to_vec(),
        passing: list.passing().map(str::to_owned).collect(),
        status: status.into(),
        note: note.into(),
    };
    files::append_json(fs, CHECKPOINTS, &record).await?;
    ctx.record(AgentEvent::Checkpoint {
        session,
        status: status.into(),
        note: note.into(),
    })
    .await;
    Ok(())
}

/// Notes a crashed session.
async fn crashed(
    ctx: &Ctx,
    session: u32,
    at: String,
    book: &mut Book,
    outcome: &mut HarnessOutcome,
) {
    ctx.record(AgentEvent::Crash { session, at }).await;
    book.crashed.insert(session);
    outcome.crashed += 1;
    outcome.wasted += 1;
}

/// Counts a failed session, checks the invariants after it, and returns whether the retry
/// budget is spent.
async fn spent(
    fs: &FsHandle,
    session: u32,
    book: &mut Book,
    failures: &mut u32,
    budget: u32,
) -> bool {
    *failures += 1;
    check_invariants(fs, session, book).await;
    *failures > budget
}
