//! The `[harness]` Rust API: the policy types and pluggable parts (selector, validator,
//! health check) of a multi-session run, used without a scenario file's names.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use simtape::rng::RngStream;
use simtape_agent::harness::parts::{
    FeatureSelector, HarnessCx, HarnessParts, Health, HealthChecker, OutcomeValidator, PartFuture,
    Validated, VerifierValidator,
};
use simtape_agent::harness::policy::{Feature, HarnessFaults};
use simtape_agent::harness::HarnessError;
use simtape_agent::{Check, EvalReport, EvalScenario, FsState, TextMatch, Verdict};

/// The shipped feature-list scenario, loaded as a user's Rust code would.
fn shipped() -> EvalScenario {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    EvalScenario::load(&root.join("feature-list.toml")).unwrap()
}

/// `shipped()` with its harness's parts replaced by `parts` and its faults by none. Its
/// features are validated by what calc.rhai holds (the shipped tests run in WASI, which this
/// crate's tests are built without).
fn with_parts(parts: HarnessParts) -> EvalScenario {
    let loaded = shipped();
    let mut eval = loaded.eval().clone();
    eval.verify
        .retain(|spec| !matches!(spec.check, Check::Gate { .. }));
    let harness = eval.harness.as_mut().expect("the scenario has a [harness]");
    harness.parts = parts;
    harness.policy.faults = HarnessFaults::default();
    for feature in &mut harness.features {
        let check = Check::Fs {
            path: "calc.rhai".into(),
            state: FsState::Modified,
            content: TextMatch {
                contains: Some(format!("fn {}(a, b)", feature.id)),
                ..TextMatch::default()
            },
        };
        feature.verify = vec![crate::common::verify("calc.rhai", 1, check)];
    }
    EvalScenario::from_parts(loaded.scenario().clone(), eval).unwrap()
}

#[test]
fn a_harness_without_an_agent_is_refused_when_its_parts_are_taken() {
    // Goal: parts given in Rust get the check a scenario file gets: a [harness] with no
    // agent to work its sessions is refused at `harness`, before any run.
    let loaded = shipped();
    let mut eval = loaded.eval().clone();
    eval.agent = None;
    eval.command = None;
    let problem = EvalScenario::from_parts(loaded.scenario().clone(), eval).unwrap_err();
    assert_eq!(problem.field, "harness", "{problem}");
    assert!(problem.message.contains("needs an agent"), "{problem}");
}

fn run(eval: &EvalScenario) -> EvalReport {
    let mut builder = eval.builder(1);
    builder.tape_in_memory();
    eval.run(&mut builder)
}

/// The features of each task session, in order.
fn sessions(report: &EvalReport) -> Vec<(Vec<String>, String)> {
    let transcript = report.transcript.as_ref().expect("the agent ran");
    transcript
        .sessions
        .iter()
        .filter(|s| s.session > 0)
        .map(|s| (s.features.clone(), s.ended.clone()))
        .collect()
}

/// Takes the last pending feature first.
#[derive(Debug)]
struct LastFirst;

impl FeatureSelector for LastFirst {
    fn select<'f>(
        &self,
        mut pending: Vec<&'f Feature>,
        limit: usize,
        _: &mut RngStream,
    ) -> Vec<&'f Feature> {
        pending.reverse();
        pending.truncate(limit);
        pending
    }
}

/// Turns down each feature's first validation, then asks the feature's own verifiers.
#[derive(Debug, Default)]
struct SecondLook {
    asked: AtomicU32,
}

impl OutcomeValidator for SecondLook {
    fn validate<'a>(
        &'a self,
        cx: &'a HarnessCx<'a>,
        feature: &'a Feature,
    ) -> PartFuture<'a, Validated> {
        let asked = self.asked.fetch_add(1, Ordering::Relaxed);
        Box::pin(async move {
            if asked.is_multiple_of(2) {
                return Ok(Validated {
                    held: false,
                    saw: "a second look is needed".into(),
                });
            }
            VerifierValidator.validate(cx, feature).await
        })
    }
}

#[test]
fn a_selector_and_a_validator_from_rust_decide_the_sessions() {
    // Goal: parts written in Rust replace the built-in ones: the selector's order is the
    // order of the sessions, and a validator that turns down each first look costs one
    // failed session per feature before the run is done.
    let parts = HarnessParts {
        selector: Arc::new(LastFirst),
        validator: Arc::new(SecondLook::default()),
        ..HarnessParts::default()
    };
    let report = run(&with_parts(parts));
    assert_eq!(report.verdict, Verdict::Pass, "{:?}", report.verifiers);
    let order: Vec<(Vec<String>, String)> = ["mul", "mul", "sub", "sub", "add", "add"]
        .iter()
        .enumerate()
        .map(|(index, id)| {
            let ended = if index % 2 == 0 {
                "failed"
            } else {
                "succeeded"
            };
            (vec![id.to_string()], ended.to_string())
        })
        .collect();
    assert_eq!(sessions(&report), order);
}

/// A health check whose check itself cannot run.
#[derive(Debug)]
struct Unreachable;

impl HealthChecker for Unreachable {
    fn check<'a>(&'a self, _: &'a HarnessCx<'a>) -> PartFuture<'a, Health> {
        Box::pin(async { Err(HarnessError::InvalidRequest("no probe configured".into())) })
    }
}

#[test]
fn a_part_that_cannot_run_stops_the_run_with_its_error_kind() {
    // Goal: an error from a part (not a failed check: a check that could not run) ends the
    // run as an ERROR whose kind names it, and no session does any work.
    let parts = HarnessParts {
        health: Arc::new(Unreachable),
        ..HarnessParts::default()
    };
    let report = run(&with_parts(parts));
    let failure = report.failure.as_ref().expect("the run stopped");
    assert_eq!(failure.kind(), "harness_invalid_request");
    assert!(
        failure.to_string().contains("no probe configured"),
        "{failure}"
    );
    assert!(matches!(report.verdict, Verdict::Error { .. }));
}

#[test]
fn the_defaults_are_the_safe_parts() {
    // Goal: the default parts are the first pending feature, each feature's own verifiers
    // and no health check; a scenario file without those keys decodes to the same.
    let defaults = format!("{:?}", HarnessParts::default());
    for part in [
        "FirstPendingFeatureSelector",
        "VerifierValidator",
        "NoHealthCheck",
    ] {
        assert!(defaults.contains(part), "{part} in {defaults}");
    }
    let loaded = shipped();
    let harness = loaded.eval().harness.as_ref().unwrap();
    assert_eq!(harness.parts, HarnessParts::default());
}
