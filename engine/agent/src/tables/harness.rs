//! Decoding of `[harness]` and its `[[harness.feature]]` list: the run policy of a
//! multi-session run and the features it builds, each validated by verifiers of the
//! `[[verify]]` shape.

use simtape::scenario::decoder::{one_of, ratio, Decoder, Field, Fields};
use simtape::scenario::Tables;

use super::mcp::Servers;
use std::sync::Arc;

use crate::harness_spec::parts::{
    AcceptAllValidator, FeatureSelector, FirstPendingFeatureSelector, HarnessParts, NoHealthCheck,
    OutcomeValidator, SeededRandomFeatureSelector, VerifierHealthCheck, VerifierValidator,
};
use crate::harness_spec::policy::{
    check_features, starter_features, FailFast, Feature, HarnessFaults, HarnessMode, HarnessPolicy,
    HarnessSpec, MarkOrder, ResumeFrom,
};
use crate::spec::VerifySpec;

/// The keys of `[harness]`.
const HARNESS_KEYS: [&str; 14] = [
    "mode",
    "max_runs",
    "max_turns_per_run",
    "max_features_per_run",
    "retry_budget",
    "fail_fast",
    "validator",
    "selector",
    "mark",
    "resume",
    "crash",
    "health_check",
    "health_check_flake",
    "feature",
];
/// The keys of one `[[harness.feature]]`.
const FEATURE_KEYS: [&str; 5] = ["id", "description", "priority", "required", "verify"];
const MODES: [(&str, HarnessMode); 3] = [
    ("strict_incremental", HarnessMode::StrictIncremental),
    ("bounded_batch", HarnessMode::BoundedBatch),
    ("unlimited_batch", HarnessMode::UnlimitedBatch),
];
/// The built-in validators and selectors by the names a scenario file gives them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ValidatorName {
    Verifiers,
    AcceptAll,
}
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SelectorName {
    FirstPending,
    SeededRandom,
}
const VALIDATORS: [(&str, ValidatorName); 2] = [
    ("verifiers", ValidatorName::Verifiers),
    ("accept_all", ValidatorName::AcceptAll),
];
const SELECTORS: [(&str, SelectorName); 2] = [
    ("first_pending", SelectorName::FirstPending),
    ("seeded_random", SelectorName::SeededRandom),
];
const MARKS: [(&str, MarkOrder); 2] = [
    ("after_validation", MarkOrder::AfterValidation),
    ("before_validation", MarkOrder::BeforeValidation),
];
const RESUMES: [(&str, ResumeFrom); 2] = [
    ("last_checkpoint", ResumeFrom::LastCheckpoint),
    ("as_left", ResumeFrom::AsLeft),
];
const FAIL_FAST: [&str; 3] = ["health_check", "chat", "validation"];
/// `(low, high, default)` of the integer keys.
const MAX_RUNS: (i64, i64, u32) = (1, 1000, 10);
const MAX_TURNS_PER_RUN: (i64, i64, u32) = (1, 1000, 20);
const MAX_FEATURES_PER_RUN: (i64, i64, u32) = (1, 1000, 1);
const RETRY_BUDGET: (i64, i64, u32) = (0, 1000, 3);
const PRIORITY: (i64, i64, u32) = (0, 1_000_000, 1);

/// Decodes `[harness]` at `line`. `objective` is the agent's task (a starter feature's
/// description); `verify` the scenario's verifiers (the starter feature's validation).
// Long because: one decode per `[harness]` key, in the documented order, each naming its
// line and field in errors.
pub(crate) fn harness(
    decoded: &mut Decoder,
    field: &Field<'_>,
    line: u64,
    servers: &Servers,
    tables: &Tables<'_>,
    starter: (&str, &[VerifySpec]),
) -> Option<HarnessSpec> {
    let what = "a [harness] table like { mode = \"strict_incremental\", max_runs = 8 }";
    let mut fields = decoded.table(field, what)?;
    let mode = pick(
        decoded,
        &mut fields,
        "mode",
        &MODES,
        HarnessMode::StrictIncremental,
    );
    let max_runs = bounded(decoded, &mut fields, "max_runs", MAX_RUNS);
    let max_turns_per_run = bounded(decoded, &mut fields, "max_turns_per_run", MAX_TURNS_PER_RUN);
    let features_field = fields.take("max_features_per_run");
    let max_features_per_run = match &features_field {
        Some(field) => integer(decoded, field, MAX_FEATURES_PER_RUN),
        None => Some(MAX_FEATURES_PER_RUN.2),
    };
    let retry_budget = bounded(decoded, &mut fields, "retry_budget", RETRY_BUDGET);
    let fail_fast = match fields.take("fail_fast") {
        Some(field) => fail_fast(decoded, &field),
        None => Some(FailFast::default()),
    };
    let validator = pick(
        decoded,
        &mut fields,
        "validator",
        &VALIDATORS,
        ValidatorName::Verifiers,
    );
    let selector = pick(
        decoded,
        &mut fields,
        "selector",
        &SELECTORS,
        SelectorName::FirstPending,
    );
    let mark = pick(
        decoded,
        &mut fields,
        "mark",
        &MARKS,
        MarkOrder::AfterValidation,
    );
    let resume = pick(
        decoded,
        &mut fields,
        "resume",
        &RESUMES,
        ResumeFrom::LastCheckpoint,
    );
    let crash = optional_ratio(decoded, &mut fields, "crash");
    let flake_field = fields.take("health_check_flake");
    let health_check_flake = match &flake_field {
        Some(field) => ratio(decoded, field).map(Some),
        None => Some(None),
    };
    let health_check = match fields.take("health_check") {
        Some(field) => super::verify::verify(decoded, &field, servers, tables, false),
        None => Some(Vec::new()),
    };
    let features = match fields.take("feature") {
        Some(field) => features(decoded, &field, servers, tables),
        None => Some(starter_features(starter.0, starter.1)),
    };
    fields.finish(
        decoded,
        &format!("unknown key, expected one of {}", one_of(&HARNESS_KEYS)),
    );
    let (mode, max_features_per_run) = (mode?, max_features_per_run?);
    // Strict mode takes exactly one feature per session: a larger batch is a contradiction.
    if mode == HarnessMode::StrictIncremental && max_features_per_run != 1 {
        let at = features_field.expect("only a given value can differ from 1");
        let message = format!(
            "expected max_features_per_run = 1 with mode = \"strict_incremental\", found {}",
            at.found()
        );
        decoded.problem(at.span.clone(), at.path.clone(), message);
        return None;
    }
    // A flaky health check needs a health check to make fail.
    if let (Some(field), Some([])) = (&flake_field, health_check.as_deref()) {
        let message = "expected a `health_check` for `health_check_flake` to fail, found none";
        decoded.problem(field.span.clone(), field.path.clone(), message.to_string());
        return None;
    }
    let features = features?;
    if let Err(error) = check_features(&features) {
        decoded.problem(field.span.clone(), field.path.clone(), error.to_string());
        return None;
    }
    let validator: Arc<dyn OutcomeValidator> = match validator? {
        ValidatorName::Verifiers => Arc::new(VerifierValidator),
        ValidatorName::AcceptAll => Arc::new(AcceptAllValidator),
    };
    let selector: Arc<dyn FeatureSelector> = match selector? {
        SelectorName::FirstPending => Arc::new(FirstPendingFeatureSelector),
        SelectorName::SeededRandom => Arc::new(SeededRandomFeatureSelector),
    };
    let health_check = health_check?;
    let health: Arc<dyn crate::harness_spec::parts::HealthChecker> = if health_check.is_empty() {
        Arc::new(NoHealthCheck)
    } else {
        Arc::new(VerifierHealthCheck(health_check))
    };
    Some(HarnessSpec {
        policy: HarnessPolicy {
            mode,
            max_runs: max_runs?,
            max_turns_per_run: max_turns_per_run?,
            max_features_per_run,
            retry_budget: retry_budget?,
            fail_fast: fail_fast?,
            mark: mark?,
            resume: resume?,
            faults: HarnessFaults {
                crash: crash?,
                health_check_flake: health_check_flake?,
            },
            line,
        },
        features,
        parts: HarnessParts {
            selector,
            validator,
            health,
        },
    })
}

/// An optional ratio key (a seeded fault's chance).
fn optional_ratio(
    decoded: &mut Decoder,
    fields: &mut Fields<'_>,
    key: &str,
) -> Option<Option<simtape::rng::Ratio>> {
    match fields.take(key) {
        Some(field) => ratio(decoded, &field).map(Some),
        None => Some(None),
    }
}

fn features(
    decoded: &mut Decoder,
    field: &Field<'_>,
    servers: &Servers,
    tables: &Tables<'_>,
) -> Option<Vec<Feature>> {
    let items = decoded.array(field, "an array of [[harness.feature]] tables")?;
    let features: Vec<Option<Feature>> = items
        .iter()
        .map(|item| feature(decoded, item, servers, tables))
        .collect();
    features.into_iter().collect()
}

fn feature(
    decoded: &mut Decoder,
    field: &Field<'_>,
    servers: &Servers,
    tables: &Tables<'_>,
) -> Option<Feature> {
    let what = "a feature like { id = \"add\", description = \"…\", verify = [ … ] }";
    let mut fields = decoded.table(field, what)?;
    let id = text(decoded, &mut fields, "id", "a feature id like \"add\"");
    let description = text(decoded, &mut fields, "description", "what the feature is");
    let priority = bounded(decoded, &mut fields, "priority", PRIORITY);
    let required = match fields.take("required") {
        Some(field) => match field.boolean() {
            Some(value) => Some(value),
            None => {
                decoded.expected(&field, "true or false");
                None
            }
        },
        None => Some(true),
    };
    let verify = match fields.take("verify") {
        Some(field) => super::verify::verify(decoded, &field, servers, tables, false),
        None => {
            decoded.missing(&fields, "verify", "the verifiers that validate the feature");
            None
        }
    };
    fields.finish(
        decoded,
        &format!("unknown key, expected one of {}", one_of(&FEATURE_KEYS)),
    );
    Some(Feature {
        id: id?,
        description: description?,
        priority: priority?,
        required: required?,
        verify: verify?,
    })
}

/// A required non-empty string key.
fn text(decoded: &mut Decoder, fields: &mut Fields<'_>, key: &str, what: &str) -> Option<String> {
    let Some(field) = fields.take(key) else {
        decoded.missing(fields, key, what);
        return None;
    };
    let text = decoded.string(&field, what)?;
    if text.is_empty() {
        decoded.expected(&field, &format!("{what} (not empty)"));
        return None;
    }
    Some(text.to_owned())
}

/// One of `choices` by name under `key`, `default` when absent.
fn pick<T: Copy>(
    decoded: &mut Decoder,
    fields: &mut Fields<'_>,
    key: &str,
    choices: &[(&str, T)],
    default: T,
) -> Option<T> {
    let Some(field) = fields.take(key) else {
        return Some(default);
    };
    let names: Vec<&str> = choices.iter().map(|(name, _)| *name).collect();
    let what = format!("{key} {}", one_of(&names));
    let name = decoded.string(&field, &what)?;
    match choices.iter().find(|(known, _)| *known == name) {
        Some((_, value)) => Some(*value),
        None => {
            decoded.expected(&field, &what);
            None
        }
    }
}

/// An integer key in `low..=high`, `default` when absent.
fn bounded(
    decoded: &mut Decoder,
    fields: &mut Fields<'_>,
    key: &str,
    bounds: (i64, i64, u32),
) -> Option<u32> {
    match fields.take(key) {
        Some(field) => integer(decoded, &field, bounds),
        None => Some(bounds.2),
    }
}

fn integer(
    decoded: &mut Decoder,
    field: &Field<'_>,
    (low, high, _): (i64, i64, u32),
) -> Option<u32> {
    let what = format!("an integer from {low} to {high}");
    decoded
        .integer(field, low, high, &what)
        .map(|n| u32::try_from(n).expect("the bounds fit in u32"))
}

/// `fail_fast`: a list of `health_check`, `chat`, `validation`.
fn fail_fast(decoded: &mut Decoder, field: &Field<'_>) -> Option<FailFast> {
    let what = format!("an array of {}", one_of(&FAIL_FAST));
    let items = decoded.array(field, &what)?;
    let mut fail_fast = FailFast::default();
    let mut complete = true;
    for item in &items {
        match decoded.string(item, &what) {
            Some("health_check") => fail_fast.health_check = true,
            Some("chat") => fail_fast.chat = true,
            Some("validation") => fail_fast.validation = true,
            Some(_) => {
                decoded.expected(item, &what);
                complete = false;
            }
            None => complete = false,
        }
    }
    complete.then_some(fail_fast)
}
