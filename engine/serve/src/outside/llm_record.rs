//! Record mode: each model call goes to a real provider and is written down as a fixture
//! entry, so the same run can later be replayed with [`Llm::replay`](simtape::cap::llm::Llm::replay).
//!
//! This is the gateway's side of the model seam: [`LlmRecorder`] is a
//! [`ModelBackend`] the core's LLM actor calls through ([`record`] builds the actor), so the
//! HTTP client, the API key and the providers' wire formats ([`crate::wire`]) stay out of
//! the core.
//!
//! For every `complete` call the recorder
//! 1. asks the [`Network`] policy about the base URL's host and port (a denial is
//!    [`LlmError::Denied`] and nothing is dialled),
//! 2. sends the request in the provider's wire format ([`Provider`], see [`crate::wire`]),
//!    blocking inside the actor's `handle`: the simulation is paused while the real call runs,
//!    so no virtual time passes and no other task runs meanwhile,
//! 3. reads the answer (or the provider's HTTP error) back into our types, and
//! 4. appends one fixture entry (one line, written and flushed before the call returns), whose
//!    `match` keys come from the request's content, so a replay matches by content.
//!
//! The virtual latency is the fixture's [`LatencyModel`], written in the fixture's header, so a
//! replay of the fixture takes exactly the virtual time the recording took. Neither the host's
//! timings nor the API key reach the fixture or the tape.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

use simtape::actor::{ActorContext, Answer};
use simtape::cap::llm::fixture::HttpFailure;
use simtape::cap::llm::latency::{tokens_of_bytes, LatencyModel};
use simtape::cap::llm::{
    fixture_header, host_and_port, recorded_entry, ChatRequest, ChatResponse, Llm, LlmActor,
    LlmError, LlmReply, ModelBackend, Provider, RecordError, Usage,
};
use simtape::cap::net::Network;
use simtape::scenario::Scenario;

use crate::wire::{error_message, Wire};

/// The `max_tokens` sent where the wire format requires one (Anthropic).
pub const MAX_TOKENS_DEFAULT: u64 = 1024;
/// How long one real call may take before it fails as [`RecordError::Transport`].
pub const TIMEOUT_MS_DEFAULT: u64 = 120_000;
/// The largest response body read from a provider.
pub const RESPONSE_BYTES_MAX: u64 = 16 * 1024 * 1024;

/// The settings of record mode.
///
/// ```
/// use simtape::cap::llm::Provider;
/// use simtape::cap::net::Network;
/// use simtape_serve::outside::RecordConfig;
/// let config = RecordConfig::new(Provider::OpenAiChat, "rec.jsonl", Network::deny().allow("127.0.0.1"))
///     .with_base_url("http://127.0.0.1:4010/v1")
///     .with_api_key("sk-test");
/// assert!(!format!("{config:?}").contains("sk-test")); // Debug never shows the key
/// ```
#[derive(Clone)]
pub struct RecordConfig {
    provider: Provider,
    base_url: String,
    api_key: String,
    model: Option<String>,
    max_tokens: u64,
    fixture_path: PathBuf,
    network: Network,
    latency: LatencyModel,
    timeout_ms: u64,
}

impl std::fmt::Debug for RecordConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key is a secret: Debug output ends up in logs and panic messages.
        f.debug_struct("RecordConfig")
            .field("provider", &self.provider)
            .field("base_url", &self.base_url)
            .field(
                "api_key",
                &if self.api_key.is_empty() {
                    ""
                } else {
                    "<redacted>"
                },
            )
            .field("model", &self.model)
            .field("max_tokens", &self.max_tokens)
            .field("fixture_path", &self.fixture_path)
            .field("network", &self.network)
            .field("latency", &self.latency)
            .field("timeout_ms", &self.timeout_ms)
            .finish()
    }
}

impl RecordConfig {
    /// Returns settings for `provider` at its real base URL, with no API key (enough for a
    /// local fake provider), writing the fixture to `fixture_path` and dialling only what
    /// `network` allows.
    pub fn new(provider: Provider, fixture_path: impl Into<PathBuf>, network: Network) -> Self {
        RecordConfig {
            provider,
            base_url: provider.default_base_url().to_owned(),
            api_key: String::new(),
            model: None,
            max_tokens: MAX_TOKENS_DEFAULT,
            fixture_path: fixture_path.into(),
            network,
            latency: LatencyModel::default(),
            timeout_ms: TIMEOUT_MS_DEFAULT,
        }
    }

    /// Returns settings as [`RecordConfig::new`], with the API key from the provider's usual
    /// environment variable (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`) and the base URL from
    /// `OPENAI_BASE_URL` / `ANTHROPIC_BASE_URL` when set, as the official SDKs do.
    pub fn from_env(
        provider: Provider,
        fixture_path: impl Into<PathBuf>,
        network: Network,
    ) -> Result<Self, RecordError> {
        let variable = provider.api_key_variable();
        let api_key = environment_variable(variable).ok_or_else(|| RecordError::MissingApiKey {
            variable: variable.to_owned(),
        })?;
        let mut config = RecordConfig::new(provider, fixture_path, network).with_api_key(api_key);
        if let Some(base_url) = environment_variable(provider.base_url_variable()) {
            config.base_url = base_url;
        }
        Ok(config)
    }

    /// Returns the settings with another base URL, in the form the provider's SDK takes
    /// (`http://127.0.0.1:4010/v1` for OpenAI, `http://127.0.0.1:4010` for Anthropic).
    pub fn with_base_url(mut self, base_url: impl Into<String>) -> Self {
        self.base_url = base_url.into();
        self
    }

    /// Returns the settings with `api_key` (empty: no authentication header).
    pub fn with_api_key(mut self, api_key: impl Into<String>) -> Self {
        self.api_key = api_key.into();
        self
    }

    /// Returns the settings sending `model` instead of each request's own model name.
    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// Returns the settings with `max_tokens` for formats that require it (Anthropic).
    pub fn with_max_tokens(mut self, max_tokens: u64) -> Self {
        self.max_tokens = max_tokens;
        self
    }

    /// Returns the settings with the latency model written to the fixture and used for the
    /// recorded calls' virtual latency.
    pub fn with_latency(mut self, latency: LatencyModel) -> Self {
        self.latency = latency;
        self
    }

    /// Returns the settings with a host-time limit on each real call.
    pub fn with_timeout_ms(mut self, timeout_ms: u64) -> Self {
        self.timeout_ms = timeout_ms;
        self
    }

    /// Returns the wire format.
    pub fn provider(&self) -> Provider {
        self.provider
    }

    /// Returns the base URL.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// Returns the fixture file written.
    pub fn fixture_path(&self) -> &Path {
        &self.fixture_path
    }
}

/// Reads one environment variable.
fn environment_variable(name: &str) -> Option<String> {
    // Record mode talks to the real world by definition, and the API key and base URL are
    // where the usual tools keep them. Neither reaches the fixture or the tape, so a recorded
    // run replays the same on any machine.
    std::env::var(name).ok().filter(|value| !value.is_empty())
}

/// Returns a record actor: each call goes to the real provider `config` names and is
/// appended to its fixture file, which is created (or truncated) now, with its header.
///
/// It fails when the base URL is not an `http`/`https` URL with a host, or the fixture file
/// cannot be created.
pub fn record(config: RecordConfig) -> Result<LlmActor, RecordError> {
    LlmRecorder::new(config).map(Llm::from_backend)
}

/// Returns the record-mode model the scenario's `[llm.record]` describes, authenticated with
/// `api_key` (the caller reads it from `key_variable`; empty: no key is sent), or `None`
/// without the section. Calls go through the scenario's `[network]` policy (without one, a
/// policy that allows the provider's host alone); `[faults.llm]` apply as they do in replay,
/// so the replay of the fixture fails the same calls. The fixture file is created (or
/// truncated) now; nothing is dialled until the run's first model call.
pub fn scenario_recorder(
    scenario: &Scenario,
    api_key: String,
) -> Option<Result<LlmActor, RecordError>> {
    let section = scenario.llm_record()?;
    let network = match scenario.llm_record_network()? {
        Ok(network) => network,
        Err(error) => return Some(Err(error)),
    };
    let out = scenario.llm_record_out()?;
    let config = RecordConfig::new(section.provider(), out, network)
        .with_base_url(section.base_url().to_owned())
        .with_api_key(api_key);
    Some(record(config).map(|actor| actor.with_faults(scenario.llm_faults().to_vec())))
}

/// The record backend's state: the settings, the HTTP agent and the fixture being written.
///
/// Clones (one per run a `Builder` builds) share the fixture file, so every run appends to it.
#[derive(Debug, Clone)]
pub struct LlmRecorder {
    config: RecordConfig,
    host: String,
    port: u16,
    endpoint: String,
    agent: ureq::Agent,
    writer: Arc<Mutex<FixtureWriter>>,
}

impl LlmRecorder {
    /// Checks the base URL, creates (or truncates) the fixture file and writes its header.
    pub fn new(config: RecordConfig) -> Result<LlmRecorder, RecordError> {
        let (host, port) = host_and_port(&config.base_url)?;
        let writer = FixtureWriter::create(&config)?;
        let agent: ureq::Agent = ureq::Agent::config_builder()
            // 4xx and 5xx answers are recorded, not transport failures.
            .http_status_as_error(false)
            // A redirect would dial a host the policy was not asked about.
            .max_redirects(0)
            // So would a proxy taken from the environment.
            .proxy(None)
            .timeout_global(Some(Duration::from_millis(config.timeout_ms)))
            .build()
            .into();
        Ok(LlmRecorder {
            endpoint: config.provider.endpoint(&config.base_url),
            config,
            host,
            port,
            agent,
            writer: Arc::new(Mutex::new(writer)),
        })
    }

    /// Returns the settings.
    pub fn config(&self) -> &RecordConfig {
        &self.config
    }
}

impl ModelBackend for LlmRecorder {
    fn answer(
        &mut self,
        request: &ChatRequest,
        request_digest: String,
        _input_bytes: u64,
        cx: &mut ActorContext<'_>,
    ) -> Answer<LlmReply> {
        let failed = |error: LlmError| Answer {
            latency_ns: 0,
            response: LlmReply {
                request_digest: request_digest.clone(),
                entry_line: None,
                alternative: None,
                usage: None,
                result: Err(error),
                stream_fault: None,
            },
        };
        if let Err(denied) = self.config.network.check(&self.host, self.port) {
            return failed(LlmError::Denied(denied));
        }
        let outcome = match self.exchange(request) {
            Ok(outcome) => outcome,
            Err(error) => return failed(LlmError::Record(error)),
        };
        let entry = recorded_entry(request, &request_digest, &outcome);
        let line = match self.writer.lock() {
            Ok(mut writer) => writer.append(&entry),
            // A poisoned lock means another run panicked mid-append; the file is still whole
            // lines up to there, so go on appending.
            Err(poisoned) => poisoned.into_inner().append(&entry),
        };
        let line = match line {
            Ok(line) => line,
            Err(error) => return failed(LlmError::Record(error)),
        };
        // Exactly what a replay of this entry computes, so both runs take the same time.
        let (latency_ns, alternative, result) = match outcome {
            Ok(response) => (
                self.config
                    .latency
                    .latency_ns(response.usage.output_tokens, cx.rng),
                Some(0),
                Ok(response),
            ),
            Err(failure) => (
                self.config.latency.latency_ns(0, cx.rng),
                None,
                Err(LlmError::Http {
                    status: failure.status,
                    message: failure.message,
                    retry_after_ms: failure.retry_after_ms,
                }),
            ),
        };
        Answer {
            latency_ns,
            response: LlmReply {
                request_digest,
                entry_line: Some(line),
                alternative,
                usage: result.as_ref().ok().map(|r| r.usage),
                result,
                stream_fault: None,
            },
        }
    }

    fn clone_backend(&self) -> Box<dyn ModelBackend> {
        Box::new(self.clone())
    }
}

impl LlmRecorder {
    /// Makes the real call: the answer, or the provider's HTTP error.
    fn exchange(
        &self,
        request: &ChatRequest,
    ) -> Result<Result<ChatResponse, HttpFailure>, RecordError> {
        let provider = self.config.provider;
        let model = self.config.model.as_deref().unwrap_or(&request.model);
        let body = provider.request_body(request, model, self.config.max_tokens);
        let transport = |detail: String| RecordError::Transport {
            url: self.endpoint.clone(),
            detail,
        };
        let mut call = self
            .agent
            .post(&self.endpoint)
            .header("content-type", "application/json");
        for (name, value) in provider.auth_headers(&self.config.api_key) {
            call = call.header(name, value);
        }
        let mut response = call
            .send(body.to_string())
            .map_err(|e| transport(e.to_string()))?;
        let status = response.status().as_u16();
        let retry_after_ms = retry_after_ms(response.headers());
        let text = response
            .body_mut()
            .with_config()
            .limit(RESPONSE_BYTES_MAX)
            .read_to_string()
            .map_err(|e| transport(e.to_string()))?;
        let malformed = |expected: String, found: String| RecordError::Malformed {
            provider: provider.name().to_owned(),
            status,
            expected,
            found,
        };
        match status {
            200..=299 => {
                let value: Value = serde_json::from_str(&text).map_err(|e| {
                    malformed("a JSON body".to_owned(), format!("invalid JSON ({e})"))
                })?;
                let answer = provider
                    .parse_response(&value)
                    .map_err(|shape| malformed(shape.expected, shape.found))?;
                let mut response = ChatResponse {
                    model: answer.model.unwrap_or_else(|| model.to_owned()),
                    text: answer.text,
                    tool_calls: answer.tool_calls,
                    stop_reason: answer.stop_reason,
                    usage: Usage::default(),
                    thinking: answer.thinking,
                };
                // A provider that leaves usage out gets the fixture's own rule, written down
                // explicitly so the replay does not depend on the rule.
                response.usage = answer.usage.unwrap_or(Usage {
                    input_tokens: tokens_of_bytes(request.input_bytes()),
                    output_tokens: tokens_of_bytes(response.output_bytes()),
                });
                Ok(Ok(response))
            }
            400..=599 => Ok(Err(HttpFailure {
                status,
                message: error_message(&text),
                retry_after_ms,
            })),
            other => Err(malformed(
                "an HTTP status 2xx, 4xx or 5xx".to_owned(),
                format!("HTTP {other}"),
            )),
        }
    }
}

/// Returns the wait a provider asks for: `retry-after-ms` (OpenAI) or `retry-after` in whole
/// seconds. An HTTP-date `retry-after` is ignored: reading it would need the wall clock.
fn retry_after_ms(headers: &ureq::http::HeaderMap) -> Option<u64> {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    let whole = |text: &str| text.split('.').next().and_then(|n| n.parse::<u64>().ok());
    if let Some(ms) = header("retry-after-ms").and_then(whole) {
        return Some(ms);
    }
    header("retry-after")
        .and_then(whole)
        .map(|seconds| seconds.saturating_mul(1_000))
}

/// The fixture file being written: the header, then one line per recorded call.
#[derive(Debug)]
struct FixtureWriter {
    path: PathBuf,
    file: std::fs::File,
    next_line: u64,
}

impl FixtureWriter {
    fn create(config: &RecordConfig) -> Result<FixtureWriter, RecordError> {
        let path = config.fixture_path.clone();
        let file = std::fs::File::create(&path).map_err(|e| RecordError::Fixture {
            path: path.display().to_string(),
            detail: e.to_string(),
        })?;
        let mut writer = FixtureWriter {
            path,
            file,
            next_line: 1,
        };
        let comment = format!(
            "# Recorded by simtape's LLM record mode from {} ({}).",
            config.provider.endpoint(&config.base_url),
            config.provider.name(),
        );
        writer.append_line(&comment)?;
        writer.append_line(&fixture_header(&config.latency).to_string())?;
        Ok(writer)
    }

    /// Appends one entry; returns its line number.
    fn append(&mut self, entry: &Value) -> Result<u64, RecordError> {
        self.append_line(&entry.to_string())
    }

    fn append_line(&mut self, text: &str) -> Result<u64, RecordError> {
        // One write per line, flushed at once, so a crash leaves whole lines behind.
        let line = format!("{text}\n");
        self.file
            .write_all(line.as_bytes())
            .and_then(|()| self.file.flush())
            .map_err(|e| RecordError::Fixture {
                path: self.path.display().to_string(),
                detail: e.to_string(),
            })?;
        let number = self.next_line;
        self.next_line = self.next_line.saturating_add(1);
        Ok(number)
    }
}
