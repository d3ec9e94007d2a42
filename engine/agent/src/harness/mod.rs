//! Multi-session runs (`[harness]`): an initializer session, then task sessions, each a fresh
//! conversation of the built-in agent on one or more pending features, until the completion
//! gate holds or a limit stops the run. All inside one simulation: one seed, one tape.
//!
//! ```text
//! initialize: manifest, feature_list.json, progress.log, checkpoint 0   (idempotent)
//! for session in 1..=max_runs:
//!     bearings: read the manifest, feature list and progress; a missing checkpoint of the
//!               session before is reported as a crash; run the health check
//!     select:   pending features (selector; 1 in strict mode, ≤ max_features_per_run)
//!     work:     the agent, a fresh conversation, ≤ max_turns_per_run turns
//!     validate: each feature's verifiers (or accept-all, when chosen by name)
//!     record:   mark passing only when validated; progress line; checkpoint
//!     check:    the invariants below; the gate: every required feature passing
//! ```
//!
//! The seeded crash fault kills a session part-way (during its turns, or between its work and
//! the validation): it leaves no checkpoint, and the next session resumes from the last one.
//! After every session the invariants are checked; each broken one is a named FAIL:
//! no feature passes without a held validation record; every session ended with a checkpoint
//! or was reported as crashed; the progress log only grew; done only when the gate holds.

pub mod files;
pub mod policy;

use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

use simtape::cap::fs::FsHandle;
use simtape::rng::RngStream;
use simtape_eval::harness::HarnessOutcome;
use simtape_eval::VerifierResult;

use crate::log::AgentEvent;
use crate::pipeline::Ctx;
use crate::report::AgentError;
use files::{
    Checkpoint, FeatureList, Manifest, StateError, Validation, CHECKPOINTS, FEATURE_LIST, MANIFEST,
    MANIFEST_VERSION, PROGRESS, VALIDATIONS,
};
use policy::{Feature, HarnessMode, HarnessSpec, MarkOrder, SelectorKind, ValidatorKind};

/// The invariants' names, as their verifier results read.
const INVARIANT_VALIDATED: &str = "harness: no feature passes without validation";
const INVARIANT_HANDOFF: &str = "harness: every session ends with a checkpoint or a crash report";
const INVARIANT_PROGRESS: &str = "harness: the progress log is append-only";
const GATE: &str = "harness: done (every required feature passing)";

/// What the harness keeps outside the files, to check them against.
#[derive(Debug, Default)]
struct Book {
    /// Features with a held validation record.
    validated: BTreeSet<String>,
    /// Sessions the crash fault killed.
    crashed: BTreeSet<u32>,
    /// The progress log as the last session left it.
    progress: String,
    /// The invariants broken so far, each with where it broke.
    broken: BTreeMap<&'static str, String>,
}

/// Why the session loop stopped.
enum Stop {
    Done,
    RunsSpent,
    RetriesSpent,
    FailFast(String),
}

/// Runs `spec` with the scenario's built-in agent; the results are the harness's verifiers
/// (the gate and the invariants), the outcome what reports count.
pub(crate) async fn run(
    ctx: &Rc<Ctx>,
    spec: &HarnessSpec,
) -> Result<(Vec<VerifierResult>, HarnessOutcome), AgentError> {
    let agent = ctx
        .shared
        .eval
        .agent
        .as_ref()
        .expect("a harness runs the built-in agent");
    let present = ctx.host.capabilities().fs().is_some();
    ctx.require(present, "a [harness]'s state files", "[fs]")?;
    let fs = ctx.host.fs();
    let mut rng = ctx.host.rng("harness");
    let policy = &spec.policy;
    let mut book = Book::default();
    let mut outcome = HarnessOutcome::default();
    let state = |error: StateError| AgentError::Setup(format!("[harness] state: {error}"));

    ctx.record(AgentEvent::Session {
        session: 0,
        phase: "initializer".into(),
        features: spec.features.iter().map(|f| f.id.clone()).collect(),
    })
    .await;
    initialize(&fs, &agent.task, spec).await.map_err(state)?;
    book.progress = files::read_text(&fs, PROGRESS).await.map_err(state)?;

    let mut failures = 0;
    let stop = loop {
        let session = outcome.sessions + 1;
        if session > policy.max_runs {
            break Stop::RunsSpent;
        }
        outcome.sessions = session;
        // Bearings: the state as the last clean session left it.
        // Bearings from a feature list the agent made unreadable are impossible: the run
        // stops there, and the invariant that read it after the last session names why.
        let list: FeatureList = match files::read_json(&fs, FEATURE_LIST).await {
            Ok(list) => list.unwrap_or_else(|| FeatureList::fresh(&spec.features)),
            Err(error) => break Stop::FailFast(error.to_string()),
        };
        if book.crashed.contains(&(session - 1)) {
            let last = last_checkpoint(&fs).await;
            let note = format!(
                "session {}: crashed; session {session} resumes from checkpoint of session {last}",
                session - 1
            );
            files::append(&fs, PROGRESS, &note).await.map_err(state)?;
        }
        if !policy.health_check.is_empty() {
            let checks = crate::verify::run_list(ctx, &policy.health_check, &[]).await?;
            if let Some(failed) = checks.iter().find(|c| !c.held) {
                let note = format!("health check {} failed: {}", failed.name, failed.saw);
                if policy.fail_fast.health_check {
                    break Stop::FailFast(note);
                }
                checkpoint(ctx, &fs, session, &[], "failed", &note)
                    .await
                    .map_err(state)?;
                failures += 1;
                outcome.wasted += 1;
                if failures > policy.retry_budget {
                    break Stop::RetriesSpent;
                }
                continue;
            }
        }
        let picked = select(&list, &spec.features, policy, &mut rng);
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
        // The crash fault: a turn of the session, or the gap between work and validation.
        let turns = policy.max_turns_per_run;
        let crash_at = match policy.crash {
            Some(ratio) if rng.chance(ratio) => Some(rng.range_inclusive(1, u64::from(turns) + 1)),
            _ => None,
        };
        let cap = match crash_at {
            Some(turn) if turn <= u64::from(turns) => turn as u32,
            _ => turns,
        };
        let task = session_task(&agent.task, &picked);
        match crate::agent::session(ctx, &task, cap).await {
            Ok(_) => {}
            Err(AgentError::Model { turn, error }) => {
                let note = format!("model error at turn {turn}: {error}");
                if policy.fail_fast.chat {
                    break Stop::FailFast(note);
                }
                checkpoint(ctx, &fs, session, &ids, "failed", &note)
                    .await
                    .map_err(state)?;
                outcome.wasted += 1;
                if spent(&fs, session, &mut book, &mut failures, policy.retry_budget).await {
                    break Stop::RetriesSpent;
                }
                continue;
            }
            Err(other) => return Err(other),
        }
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
            crashed(ctx, session, at, &mut book, &mut outcome).await;
            if spent(&fs, session, &mut book, &mut failures, policy.retry_budget).await {
                break Stop::RetriesSpent;
            }
            continue;
        }
        let mut all_held = true;
        let mut notes = Vec::new();
        for feature in &picked {
            let (held, saw) = validate(ctx, feature, policy.validator).await?;
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
        checkpoint(ctx, &fs, session, &ids, status, &note)
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
    let results = results(&stop, &outcome, &unvalidated, &book, spec, ctx).await;
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
        status: "succeeded".into(),
        note: "initialized".into(),
    };
    files::append_json(fs, CHECKPOINTS, &first).await?;
    // The manifest last: it marks the initialization complete.
    files::write_json(fs, MANIFEST, &manifest).await
}

/// Returns the pending features a session takes on, in order.
fn select<'a>(
    list: &FeatureList,
    features: &'a [Feature],
    policy: &policy::HarnessPolicy,
    rng: &mut RngStream,
) -> Vec<&'a Feature> {
    let passing: BTreeSet<&str> = list
        .features
        .iter()
        .filter(|e| e.passes)
        .map(|e| e.id.as_str())
        .collect();
    let mut pending: Vec<&Feature> = features
        .iter()
        .filter(|f| !passing.contains(f.id.as_str()))
        .collect();
    // Stable: equal priorities keep file order.
    pending.sort_by_key(|f| f.priority);
    let limit = match policy.mode {
        HarnessMode::StrictIncremental => 1,
        HarnessMode::BoundedBatch => policy.max_features_per_run as usize,
        HarnessMode::UnlimitedBatch => pending.len(),
    };
    if policy.selector == SelectorKind::SeededRandom && !pending.is_empty() {
        let first = rng.below(pending.len() as u64) as usize;
        pending.rotate_left(first);
    }
    pending.truncate(limit);
    pending
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

/// Validates `feature`: whether it holds, and what the validator saw.
async fn validate(
    ctx: &Ctx,
    feature: &Feature,
    validator: ValidatorKind,
) -> Result<(bool, String), AgentError> {
    match validator {
        ValidatorKind::AcceptAll => Ok((true, "accepted without checks".into())),
        ValidatorKind::Verifiers => {
            let results = crate::verify::run_list(ctx, &feature.verify, &[]).await?;
            match results.iter().find(|r| !r.held) {
                Some(failed) => Ok((false, format!("{}: {}", failed.name, failed.saw))),
                None if results.is_empty() => Ok((false, "no verifier".into())),
                None => Ok((true, format!("{} verifier(s) held", results.len()))),
            }
        }
    }
}

/// Writes a checkpoint and puts it on the tape.
async fn checkpoint(
    ctx: &Ctx,
    fs: &FsHandle,
    session: u32,
    features: &[String],
    status: &str,
    note: &str,
) -> Result<(), StateError> {
    let record = Checkpoint {
        session,
        features: features.to_vec(),
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

/// Returns the session of the last readable checkpoint, as the progress log names it.
async fn last_checkpoint(fs: &FsHandle) -> String {
    match files::read_lines::<Checkpoint>(fs, CHECKPOINTS).await {
        Ok(checkpoints) => checkpoints.last().map_or(0, |c| c.session).to_string(),
        // The agent broke the file; the handoff invariant says so.
        Err(_) => "unknown (the checkpoints do not read)".into(),
    }
}

/// Checks the invariants after `session`; the first break of each is kept, with the session.
/// A state file the agent made unreadable breaks the invariant that reads it.
async fn check_invariants(fs: &FsHandle, session: u32, book: &mut Book) {
    let mut broken = Vec::new();
    match files::read_json::<FeatureList>(fs, FEATURE_LIST).await {
        Ok(Some(list)) => {
            let unvalidated: Vec<&str> = list
                .features
                .iter()
                .filter(|e| e.passes && !book.validated.contains(&e.id))
                .map(|e| e.id.as_str())
                .collect();
            if !unvalidated.is_empty() {
                broken.push((
                    INVARIANT_VALIDATED,
                    format!(
                        "after session {session}: {} passing with no held validation record",
                        unvalidated.join(", ")
                    ),
                ));
            }
        }
        Ok(None) => broken.push((
            INVARIANT_VALIDATED,
            format!("after session {session}: {FEATURE_LIST} is gone"),
        )),
        Err(error) => broken.push((
            INVARIANT_VALIDATED,
            format!("after session {session}: {error}"),
        )),
    }
    match files::read_lines::<Checkpoint>(fs, CHECKPOINTS).await {
        Ok(checkpoints) => {
            let ended: BTreeSet<u32> = checkpoints.iter().map(|c| c.session).collect();
            let lost: Vec<String> = (0..=session)
                .filter(|s| !ended.contains(s) && !book.crashed.contains(s))
                .map(|s| s.to_string())
                .collect();
            if !lost.is_empty() {
                broken.push((
                    INVARIANT_HANDOFF,
                    format!(
                        "session(s) {} left neither a checkpoint nor a crash report",
                        lost.join(", ")
                    ),
                ));
            }
        }
        Err(error) => broken.push((
            INVARIANT_HANDOFF,
            format!("after session {session}: {error}"),
        )),
    }
    match files::read_text(fs, PROGRESS).await {
        Ok(progress) if progress.starts_with(&book.progress) => book.progress = progress,
        Ok(progress) => {
            broken.push((
                INVARIANT_PROGRESS,
                format!("after session {session}: earlier lines of {PROGRESS} were changed"),
            ));
            book.progress = progress;
        }
        Err(error) => broken.push((
            INVARIANT_PROGRESS,
            format!("after session {session}: {error}"),
        )),
    }
    for (name, saw) in broken {
        book.broken.entry(name).or_insert(saw);
    }
}

/// The harness's verifier results: each invariant, then the gate.
async fn results(
    stop: &Stop,
    outcome: &HarnessOutcome,
    unvalidated: &[String],
    book: &Book,
    spec: &HarnessSpec,
    ctx: &Ctx,
) -> Vec<VerifierResult> {
    let line = spec.policy.line;
    let gate_saw = match stop {
        Stop::Done if !unvalidated.is_empty() => format!(
            "declared done after {} session(s) with {} passing unvalidated",
            outcome.sessions,
            unvalidated.join(", ")
        ),
        Stop::Done => format!(
            "every required feature passing after {} session(s)",
            outcome.sessions
        ),
        Stop::RunsSpent => format!(
            "not done after max_runs = {} session(s)",
            spec.policy.max_runs
        ),
        Stop::RetriesSpent => format!(
            "stopped: retry_budget = {} spent after {} session(s)",
            spec.policy.retry_budget, outcome.sessions
        ),
        Stop::FailFast(why) => format!("stopped (fail fast): {why}"),
    };
    let pending: Vec<&str> = outcome
        .features
        .iter()
        .filter(|(_, passes)| !**passes)
        .map(|(id, _)| id.as_str())
        .collect();
    let gate_saw = if outcome.done || pending.is_empty() {
        gate_saw
    } else {
        format!("{gate_saw}; pending: {}", pending.join(", "))
    };
    // The invariants first: when one broke, it is what the verdict names.
    let mut results = Vec::new();
    for name in [INVARIANT_VALIDATED, INVARIANT_HANDOFF, INVARIANT_PROGRESS] {
        let (held, saw) = match book.broken.get(name) {
            Some(saw) => (false, saw.clone()),
            None => (true, "held after every session".to_string()),
        };
        results.push(VerifierResult {
            name: name.into(),
            line,
            held,
            saw,
        });
    }
    results.push(VerifierResult {
        name: GATE.into(),
        line,
        held: outcome.done,
        saw: gate_saw,
    });
    for result in &results {
        ctx.record(AgentEvent::Verifier {
            name: result.name.clone(),
            held: result.held,
            saw: result.saw.clone(),
        })
        .await;
    }
    results
}
