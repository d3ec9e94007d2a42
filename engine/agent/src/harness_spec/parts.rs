//! The harness's pluggable parts: which pending features a session takes on
//! ([`FeatureSelector`]), what decides that a feature's work is done ([`OutcomeValidator`]),
//! and what is checked before any work ([`HealthChecker`]). A scenario file picks built-in
//! parts by name (`selector`, `validator`, `health_check`); Rust picks any implementation
//! through [`HarnessParts`].
//!
//! The defaults are the safe ones: the first pending feature by priority, each feature's own
//! verifiers, no health check. Accepting every session's work ([`AcceptAllValidator`]) proves
//! nothing, so it is never a default.
//!
//! Parts run inside the simulation: what they read and run goes through the run's actors (on
//! the tape), and their randomness comes from the harness's own stream.

use std::fmt::Debug;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use simtape::rng::RngStream;
use simtape::Host;
use simtape_eval::VerifierResult;

use super::error::HarnessError;
use super::policy::Feature;
use crate::report::AgentError;
use crate::spec::VerifySpec;

/// What a part's async step returns.
pub type PartFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, HarnessError>> + 'a>>;

/// What a run's verifiers return, boxed (see [`PartRun::verify`]).
pub(crate) type VerifyFuture<'a> =
    Pin<Box<dyn Future<Output = Result<Vec<VerifierResult>, AgentError>> + 'a>>;

/// What a part reaches of the run it is a part of. The harness implements it for the run's
/// context, so these parts (which the run's context holds, through the scenario's
/// `[harness]`) name no type of the run's.
pub(crate) trait PartRun {
    /// The run's host.
    fn host(&self) -> &Host;
    /// Runs `verifiers` now, in order.
    fn verify<'a>(&'a self, verifiers: &'a [VerifySpec]) -> VerifyFuture<'a>;
}

/// What a part may use: the run's host (its actors) and the scenario's verifiers.
pub struct HarnessCx<'a> {
    run: &'a dyn PartRun,
    session: u32,
}

impl Debug for HarnessCx<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HarnessCx")
            .field("session", &self.session)
            .finish_non_exhaustive()
    }
}

impl<'a> HarnessCx<'a> {
    pub(crate) fn new(run: &'a dyn PartRun, session: u32) -> HarnessCx<'a> {
        HarnessCx { run, session }
    }

    /// The run's host: its actors (fs, process, MCP, …) and clock.
    pub fn host(&self) -> &Host {
        self.run.host()
    }

    /// The session the step belongs to (0 is the initializer).
    pub fn session(&self) -> u32 {
        self.session
    }

    /// Runs `verifiers` (the `[[verify]]` shapes) now, in order.
    pub async fn verify(
        &self,
        verifiers: &[VerifySpec],
    ) -> Result<Vec<VerifierResult>, AgentError> {
        self.run.verify(verifiers).await
    }
}

/// A feature's validation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Validated {
    /// Whether the feature's work is done.
    pub held: bool,
    /// What the validator saw.
    pub saw: String,
}

/// The health check before a session's work.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Health {
    /// The project is in a state to work on.
    Ready,
    /// It is not; the session does no work. What failed.
    Failed(String),
}

/// Decides which pending features a session takes on.
pub trait FeatureSelector: Debug + Send + Sync {
    /// Returns at most `limit` of `pending` (ordered by priority, then file order), in the
    /// order the session takes them on. `rng` is the harness's own stream.
    fn select<'f>(
        &self,
        pending: Vec<&'f Feature>,
        limit: usize,
        rng: &mut RngStream,
    ) -> Vec<&'f Feature>;
}

/// Decides whether a session's work on a feature is done (the validation gate).
pub trait OutcomeValidator: Debug + Send + Sync {
    /// Validates `feature` after the session's work.
    fn validate<'a>(
        &'a self,
        cx: &'a HarnessCx<'a>,
        feature: &'a Feature,
    ) -> PartFuture<'a, Validated>;
}

/// Checks, before a session's work, that the project is in a state to work on.
pub trait HealthChecker: Debug + Send + Sync {
    /// Checks before the session `cx.session()` works.
    fn check<'a>(&'a self, cx: &'a HarnessCx<'a>) -> PartFuture<'a, Health>;
}

/// The first pending features by priority: the default.
#[derive(Debug, Clone, Copy, Default)]
pub struct FirstPendingFeatureSelector;

impl FeatureSelector for FirstPendingFeatureSelector {
    fn select<'f>(
        &self,
        mut pending: Vec<&'f Feature>,
        limit: usize,
        _: &mut RngStream,
    ) -> Vec<&'f Feature> {
        pending.truncate(limit);
        pending
    }
}

/// Pending features from a point drawn from the seed, then on in priority order
/// (exploration: every seed tries another order).
#[derive(Debug, Clone, Copy, Default)]
pub struct SeededRandomFeatureSelector;

impl FeatureSelector for SeededRandomFeatureSelector {
    fn select<'f>(
        &self,
        mut pending: Vec<&'f Feature>,
        limit: usize,
        rng: &mut RngStream,
    ) -> Vec<&'f Feature> {
        if !pending.is_empty() {
            let first = rng.below(pending.len() as u64) as usize;
            pending.rotate_left(first);
        }
        pending.truncate(limit);
        pending
    }
}

/// Each feature's own verifiers (its `verify` list): the default. A feature without any is
/// not validated (nothing could tell its work is done).
#[derive(Debug, Clone, Copy, Default)]
pub struct VerifierValidator;

impl OutcomeValidator for VerifierValidator {
    fn validate<'a>(
        &'a self,
        cx: &'a HarnessCx<'a>,
        feature: &'a Feature,
    ) -> PartFuture<'a, Validated> {
        Box::pin(async move {
            let results =
                cx.verify(&feature.verify)
                    .await
                    .map_err(|error| HarnessError::Validation {
                        feature: feature.id.clone(),
                        source: Box::new(error),
                    })?;
            Ok(match results.iter().find(|r| !r.held) {
                Some(failed) => Validated {
                    held: false,
                    saw: format!("{}: {}", failed.name, failed.saw),
                },
                None if results.is_empty() => Validated {
                    held: false,
                    saw: "no verifier".into(),
                },
                None => Validated {
                    held: true,
                    saw: format!("{} verifier(s) held", results.len()),
                },
            })
        })
    }
}

/// Accepts every session's work without checking anything. Only when chosen by name: a
/// harness that uses it proves nothing about its features.
#[derive(Debug, Clone, Copy, Default)]
pub struct AcceptAllValidator;

impl OutcomeValidator for AcceptAllValidator {
    fn validate<'a>(&'a self, _: &'a HarnessCx<'a>, _: &'a Feature) -> PartFuture<'a, Validated> {
        Box::pin(async {
            Ok(Validated {
                held: true,
                saw: "accepted without checks".into(),
            })
        })
    }
}

/// No health check: every session is ready. The default.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoHealthCheck;

impl HealthChecker for NoHealthCheck {
    fn check<'a>(&'a self, _: &'a HarnessCx<'a>) -> PartFuture<'a, Health> {
        Box::pin(async { Ok(Health::Ready) })
    }
}

/// A health check of verifiers (the `[[verify]]` shapes, a `gate` among them): ready when
/// every one holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifierHealthCheck(pub Vec<VerifySpec>);

impl HealthChecker for VerifierHealthCheck {
    fn check<'a>(&'a self, cx: &'a HarnessCx<'a>) -> PartFuture<'a, Health> {
        Box::pin(async move {
            let results = cx
                .verify(&self.0)
                .await
                .map_err(|error| HarnessError::HealthCheck(Box::new(error)))?;
            Ok(match results.iter().find(|r| !r.held) {
                Some(failed) => Health::Failed(format!("{}: {}", failed.name, failed.saw)),
                None => Health::Ready,
            })
        })
    }
}

/// The parts a harness runs with.
#[derive(Debug, Clone)]
pub struct HarnessParts {
    /// Which pending features a session takes on.
    pub selector: Arc<dyn FeatureSelector>,
    /// What decides that a feature's work is done.
    pub validator: Arc<dyn OutcomeValidator>,
    /// What is checked before each session's work.
    pub health: Arc<dyn HealthChecker>,
}

impl Default for HarnessParts {
    fn default() -> HarnessParts {
        HarnessParts {
            selector: Arc::new(FirstPendingFeatureSelector),
            validator: Arc::new(VerifierValidator),
            health: Arc::new(NoHealthCheck),
        }
    }
}

/// Parts compare by what they are (their debug form), so two loads of one scenario file are
/// equal.
impl PartialEq for HarnessParts {
    fn eq(&self, other: &HarnessParts) -> bool {
        format!("{self:?}") == format!("{other:?}")
    }
}

impl Eq for HarnessParts {}
