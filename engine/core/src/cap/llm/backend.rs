//! The model's backend seam: where a [`LlmActor`](super::LlmActor)'s answers come from.
//!
//! The actor does everything that is the same whatever answers (request digests and records,
//! `[[faults.llm]]`, the tape); its backend answers. The core has the backends that stay
//! inside the simulation: a fixture replay (`Llm::replay`, `Llm::from_fixture`, and a
//! fixture made from a tape by `fixtures from-tape`). A backend that reaches the outside world
//! (record mode's HTTP client and the providers' wire formats) is the gateway crate's
//! (`simtape-serve`): it implements [`ModelBackend`] and hands it to
//! [`Llm::from_backend`](super::Llm::from_backend), so the core holds no HTTP client and reads
//! no API key.
//!
//! [`RecordError`] stays here because it is part of what the tape can say about a call
//! ([`LlmError::Record`](super::LlmError::Record)), whoever recorded it.

use serde::Serialize;

use super::actor::LlmReply;
use super::request::ChatRequest;
use crate::actor::{ActorContext, Answer};

/// What answers an [`LlmActor`](super::LlmActor)'s calls; chosen when the actor is built. A
/// run switches backend only at a handover fixed when it was built
/// ([`LlmActor::handing_over`](super::LlmActor::handing_over)).
///
/// `handle` of the actor calls [`ModelBackend::answer`] once per call the fault rules let
/// through. A backend that blocks (a real HTTP call) pauses the simulation: no virtual time
/// passes and no other task runs meanwhile. Its randomness must come from `cx.rng`, the
/// actor's own stream, and its latency must be virtual, so a replay of what it recorded takes
/// the same time. `Send + Sync` because a sweep shares one loaded scenario, and the actors it
/// clones for each run, between the threads of its pool.
pub trait ModelBackend: std::fmt::Debug + Send + Sync {
    /// Answers `request`, whose canonical digest is `request_digest` and whose usage-rule
    /// input size is `input_bytes`.
    fn answer(
        &mut self,
        request: &ChatRequest,
        request_digest: String,
        input_bytes: u64,
        cx: &mut ActorContext<'_>,
    ) -> Answer<LlmReply>;

    /// Notes a call of the run that another backend answered (before a handover to this one),
    /// for a backend that numbers the run's calls; the default ignores it.
    fn answered_elsewhere(&mut self, request: &ChatRequest) {
        let _ = request;
    }

    /// Returns the lines of `once` entries not used yet, for a backend that has any.
    fn unused_once_lines(&self) -> Vec<u64> {
        Vec::new()
    }

    /// Returns a copy for another run: a `Builder` clones its actors once per run it builds.
    fn clone_backend(&self) -> Box<dyn ModelBackend>;
}

impl Clone for Box<dyn ModelBackend> {
    fn clone(&self) -> Box<dyn ModelBackend> {
        self.clone_backend()
    }
}

/// Why a recorded call (or setting up record mode) failed, apart from provider HTTP errors.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum RecordError {
    /// The API key's environment variable is not set. Fatal for record mode: set it.
    #[error("record mode needs an API key: set {variable}")]
    MissingApiKey {
        /// The variable (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`).
        variable: String,
    },
    /// The base URL is not an `http` or `https` URL with a host. Fatal: fix the setting.
    #[error("base URL {url:?} is not usable: {reason}")]
    BadBaseUrl {
        /// The URL as given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The fixture file cannot be created or appended to. Fatal: what was recorded so far is
    /// in the file, the rest is lost.
    #[error("{path}: cannot write the LLM fixture: {detail}")]
    Fixture {
        /// The fixture file.
        path: String,
        /// The OS error.
        detail: String,
    },
    /// The provider could not be reached or did not answer in time (connect, TLS, timeout,
    /// a redirect, reading the body). Not recorded: nothing came back to replay.
    #[error("calling {url} failed: {detail}")]
    Transport {
        /// The endpoint.
        url: String,
        /// What went wrong.
        detail: String,
    },
    /// The provider answered, but not in the shape its wire format promises. Not recorded.
    #[error(
        "the {provider} answer (HTTP {status}) is malformed: expected {expected}, found {found}"
    )]
    Malformed {
        /// The wire format's name.
        provider: String,
        /// The HTTP status of the answer.
        status: u16,
        /// What was expected, and where.
        expected: String,
        /// What was there instead.
        found: String,
    },
}
