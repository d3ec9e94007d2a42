//! What a `[harness]` table decodes to: the run policy of a multi-session run and the features
//! it builds. Plain data, usable from Rust as from scenario files.

use serde::{Deserialize, Serialize};
use simtape::rng::Ratio;

use super::parts::HarnessParts;
use crate::spec::VerifySpec;

/// How many features one session may take on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HarnessMode {
    /// Exactly one feature per session (`max_features_per_run` must be 1).
    StrictIncremental,
    /// Up to `max_features_per_run` features per session.
    BoundedBatch,
    /// Every pending feature in one session, until the gate or a limit stops progress.
    UnlimitedBatch,
}

/// When a validated feature is marked passing in `feature_list.json`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MarkOrder {
    /// Only once its validation held: the correct order.
    AfterValidation,
    /// As soon as the session's work ends, before validating: a harness bug a crash between
    /// work and validation exposes (a feature passing with no validation record).
    BeforeValidation,
}

/// What a session after a crashed one starts from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ResumeFrom {
    /// The last checkpoint: what it says passed, and nothing else. The correct handoff.
    LastCheckpoint,
    /// The state files as the crash left them: a harness bug (a feature the crashed session
    /// marked stays marked), for finding it.
    AsLeft,
}

/// Which failures end the whole run at once instead of spending the retry budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct FailFast {
    /// The health check before a session's work did not hold.
    pub health_check: bool,
    /// The model could not be asked (a model error the agent's retries did not absorb).
    pub chat: bool,
    /// A feature's validation did not hold.
    pub validation: bool,
}

/// The run policy of a multi-session run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HarnessPolicy {
    /// How many features a session may take on.
    pub mode: HarnessMode,
    /// Task sessions at most, after the initializer.
    pub max_runs: u32,
    /// Model turns of one session at most (its context budget).
    pub max_turns_per_run: u32,
    /// Features of one session at most (1 in strict mode).
    pub max_features_per_run: u32,
    /// Failed sessions (crashed, not validated, model error) the run absorbs before it stops.
    pub retry_budget: u32,
    /// Which failures stop the run at once.
    pub fail_fast: FailFast,
    /// When a validated feature is marked passing.
    pub mark: MarkOrder,
    /// What a session after a crashed one starts from.
    pub resume: ResumeFrom,
    /// The faults long runs meet, drawn from the seed.
    #[serde(skip)]
    pub faults: HarnessFaults,
    /// The line of the `[harness]` table (its verifier results name it).
    #[serde(skip)]
    pub line: u64,
}

/// The seeded faults of a multi-session run: each a chance per session, drawn from the
/// harness's own random stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HarnessFaults {
    /// The session is killed part-way (during its turns, or between its work and the
    /// validation), leaving no checkpoint.
    pub crash: Option<Ratio>,
    /// The health check fails this once although nothing is wrong (a flaky check); the next
    /// session checks afresh.
    pub health_check_flake: Option<Ratio>,
}

/// One feature the harness builds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Feature {
    /// Its id: unique, the key in `feature_list.json`.
    pub id: String,
    /// What it is, as the session's task names it.
    pub description: String,
    /// Lower first.
    pub priority: u32,
    /// Whether completion needs it.
    pub required: bool,
    /// The verifiers that validate it.
    #[serde(skip)]
    pub verify: Vec<VerifySpec>,
}

/// `[harness]`: the policy, the features (a starter skeleton when none are given) and the
/// parts that select, validate and check health.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HarnessSpec {
    /// The run policy.
    pub policy: HarnessPolicy,
    /// The features, in file order.
    pub features: Vec<Feature>,
    /// The selector, validator and health checker.
    pub parts: HarnessParts,
}

/// The id of the starter feature a harness without `[[harness.feature]]` builds.
pub const STARTER_FEATURE_ID: &str = "objective";

/// Returns the starter skeleton for `objective`: one required feature, the objective itself,
/// validated by the scenario's own `[[verify]]` list.
pub fn starter_features(objective: &str, verify: &[VerifySpec]) -> Vec<Feature> {
    vec![Feature {
        id: STARTER_FEATURE_ID.to_owned(),
        description: objective.to_owned(),
        priority: 1,
        required: true,
        verify: verify.to_vec(),
    }]
}

/// A feature list that breaks the rules: ids unique, at least one required feature.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FeatureListError {
    /// Two features share an id.
    #[error("feature id {0:?} is given twice")]
    DuplicateId(String),
    /// No feature is required, so completion would mean nothing.
    #[error("no feature is required: completion needs at least one")]
    NoneRequired,
    /// A feature has an empty id.
    #[error("a feature has an empty id")]
    EmptyId,
}

/// Checks the feature list's rules.
pub fn check_features(features: &[Feature]) -> Result<(), FeatureListError> {
    let mut seen = std::collections::BTreeSet::new();
    for feature in features {
        if feature.id.is_empty() {
            return Err(FeatureListError::EmptyId);
        }
        if !seen.insert(feature.id.as_str()) {
            return Err(FeatureListError::DuplicateId(feature.id.clone()));
        }
    }
    if !features.iter().any(|f| f.required) {
        return Err(FeatureListError::NoneRequired);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feature(id: &str, required: bool) -> Feature {
        Feature {
            id: id.into(),
            description: String::new(),
            priority: 1,
            required,
            verify: Vec::new(),
        }
    }

    #[test]
    fn a_feature_list_needs_unique_ids_and_a_required_feature() {
        assert_eq!(
            check_features(&[feature("a", true), feature("b", false)]),
            Ok(())
        );
        assert_eq!(
            check_features(&[feature("a", true), feature("a", false)]),
            Err(FeatureListError::DuplicateId("a".into()))
        );
        assert_eq!(
            check_features(&[feature("a", false)]),
            Err(FeatureListError::NoneRequired)
        );
        assert_eq!(
            check_features(&[feature("", true)]),
            Err(FeatureListError::EmptyId)
        );
        let starter = starter_features("Build it.", &[]);
        assert_eq!(check_features(&starter), Ok(()));
        assert_eq!(starter[0].description, "Build it.");
    }
}
