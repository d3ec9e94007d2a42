//! What stops a harness run, by kind. A session that fails (not validated, crashed, a model
//! error its retries did not absorb) is not an error: it is counted against the retry budget
//! and the run goes on. These are what a harness cannot go on from.

use super::files::StateError;
use crate::report::AgentError;

/// Why a harness run cannot go on.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum HarnessError {
    /// The harness was asked for something it cannot do (a state file it needs is in a
    /// place the fs actor refuses, a part asked for a capability the scenario lacks).
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    /// The harness's state (its memory across sessions) cannot be read or written.
    #[error("harness state: {0}")]
    Memory(#[from] StateError),
    /// The model could not be asked (with `fail_fast = ["chat"]`).
    #[error("chat: {0}")]
    Chat(String),
    /// A feature's validation could not run (not: it ran and did not hold).
    #[error("validation of {feature}: {source}")]
    Validation {
        /// The feature.
        feature: String,
        /// What stopped the validator.
        source: Box<AgentError>,
    },
    /// The health check could not run (not: it ran and failed).
    #[error("health check: {0}")]
    HealthCheck(Box<AgentError>),
    /// A task session found the state not initialized (the manifest missing or of another
    /// version).
    #[error("not ready: {0}")]
    NotReady(String),
}

impl HarnessError {
    /// Returns a short machine-readable name of the kind; a validation or health check
    /// stopped by something else (a policy, a replay miss) is named by what stopped it.
    pub fn kind(&self) -> &'static str {
        match self {
            HarnessError::InvalidRequest(_) => "harness_invalid_request",
            HarnessError::Memory(_) => "harness_memory",
            HarnessError::Chat(_) => "harness_chat",
            HarnessError::Validation { source, .. } => source.kind(),
            HarnessError::HealthCheck(source) => source.kind(),
            HarnessError::NotReady(_) => "harness_not_ready",
        }
    }

    /// The error under a validation or health check, when one stopped it.
    pub fn agent_error(&self) -> Option<&AgentError> {
        match self {
            HarnessError::Validation { source, .. } | HarnessError::HealthCheck(source) => {
                Some(source)
            }
            _ => None,
        }
    }
}
