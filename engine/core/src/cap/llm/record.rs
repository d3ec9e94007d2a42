//! Record mode: each model call goes to a real provider and is written down as a fixture
//! entry, so the same run can later be replayed with [`Llm::replay`](super::Llm::replay).
//!
//! For every `complete` call the recorder
//! 1. asks the [`Network`] policy about the base URL's host and port (a denial is
//!    [`LlmError::Denied`] and nothing is dialled),
//! 2. sends the request in the provider's wire format ([`Provider`], see [`super::wire`]),
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

use serde::Serialize;
use serde_json::{json, Map, Value};

use super::actor::{LlmError, LlmReply};
use super::fixture::HttpFailure;
use super::latency::{tokens_of_bytes, LatencyModel};
use super::request::{ChatRequest, ChatResponse, Usage};
use super::wire::{error_message, Provider};
use crate::actor::{ActorContext, Answer};
use crate::cap::net::Network;

/// The `max_tokens` sent where the wire format requires one (Anthropic).
pub const MAX_TOKENS_DEFAULT: u64 = 1024;
/// How long one real call may take before it fails as [`RecordError::Transport`].
pub const TIMEOUT_MS_DEFAULT: u64 = 120_000;
/// The largest response body read from a provider.
pub const RESPONSE_BYTES_MAX: u64 = 16 * 1024 * 1024;

/// Why a recorded call (or setting up record mode) failed, apart from provider HTTP errors.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[serde(rename_all = "snake_case")]
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

/// The settings of record mode.
///
/// ```
/// use simtape::cap::llm::{Provider, RecordConfig};
/// use simtape::cap::net::Network;
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
#[allow(clippy::disallowed_methods)]
fn environment_variable(name: &str) -> Option<String> {
    // Record mode talks to the real world by definition, and the API key and base URL are
    // where the usual tools keep them. Neither reaches the fixture or the tape, so a recorded
    // run replays the same on any machine.
    std::env::var(name).ok().filter(|value| !value.is_empty())
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

    pub(super) fn answer(
        &mut self,
        request: &ChatRequest,
        request_digest: String,
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
        let entry = entry(request, &request_digest, &outcome);
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

/// Returns the host and port of an `http` or `https` URL (the scheme's port by default).
pub(crate) fn host_and_port(url: &str) -> Result<(String, u16), RecordError> {
    let bad = |reason: &str| RecordError::BadBaseUrl {
        url: url.to_owned(),
        reason: reason.to_owned(),
    };
    let uri: ureq::http::Uri = url.parse().map_err(|_| bad("it does not parse as a URL"))?;
    let default_port = match uri.scheme_str() {
        Some("http") => 80,
        Some("https") => 443,
        _ => return Err(bad("expected the scheme http or https")),
    };
    let authority = uri.authority().ok_or_else(|| bad("expected a host"))?;
    if authority.as_str().contains('@') {
        return Err(bad("expected no user name or password in the URL"));
    }
    let host = authority.host();
    if host.is_empty() {
        return Err(bad("expected a host"));
    }
    Ok((
        host.to_owned(),
        authority.port_u16().unwrap_or(default_port),
    ))
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

/// Returns the fixture entry of one recorded call.
fn entry(
    request: &ChatRequest,
    request_digest: &str,
    outcome: &Result<ChatResponse, HttpFailure>,
) -> Value {
    let tools: Vec<&str> = request.tools.iter().map(|t| t.name.as_str()).collect();
    let call = CallMatch {
        match_text: &request.match_text(),
        tools: &tools,
        scope: request.scope.as_deref(),
    };
    fixture_entry(&call, request_digest, outcome)
}

/// What a fixture entry written for one call matches: the conversation's match text
/// ([`ChatRequest::match_text`]), the tool names offered, the scope.
#[derive(Debug, Clone, Copy)]
pub(super) struct CallMatch<'a> {
    pub(super) match_text: &'a str,
    pub(super) tools: &'a [&'a str],
    pub(super) scope: Option<&'a str>,
}

/// Returns the fixture entry that answers `call` with `outcome`: record mode writes one per
/// real call, `fixtures from-tape` one per answered call of a tape.
pub(super) fn fixture_entry(
    call: &CallMatch<'_>,
    request_digest: &str,
    outcome: &Result<ChatResponse, HttpFailure>,
) -> Value {
    // The match holds the whole conversation text (exactly, as an escaped glob) and the tool
    // names offered: content alone, never the call's position, so replay survives reordering.
    // Repeated identical requests become several `once` entries, used in recording order.
    let mut matcher = Map::new();
    matcher.insert(
        "text".into(),
        json!({"glob": glob::Pattern::escape(call.match_text)}),
    );
    if !call.tools.is_empty() {
        matcher.insert("tools".into(), call.tools.into());
    }
    let mut entry = Map::new();
    entry.insert("_request_digest".into(), request_digest.into());
    entry.insert("match".into(), Value::Object(matcher));
    if let Some(scope) = call.scope {
        entry.insert("scope".into(), scope.into());
    }
    match outcome {
        Ok(response) => {
            let calls: Vec<Value> = response
                .tool_calls
                .iter()
                .map(|c| json!({"id": c.id, "name": c.name, "arguments": c.arguments}))
                .collect();
            let mut answer = json!({
                "text": response.text,
                "tool_calls": calls,
                "stop_reason": response.stop_reason,
                "usage": {
                    "input_tokens": response.usage.input_tokens,
                    "output_tokens": response.usage.output_tokens,
                },
                "model": response.model,
            });
            if let Some(thinking) = &response.thinking {
                answer["thinking"] =
                    json!({"text": thinking.text, "signature": thinking.signature});
            }
            entry.insert("response".into(), answer);
        }
        Err(failure) => {
            let mut error = Map::new();
            error.insert("status".into(), failure.status.into());
            error.insert("message".into(), failure.message.as_str().into());
            if let Some(ms) = failure.retry_after_ms {
                error.insert("retry_after_ms".into(), ms.into());
            }
            entry.insert("error".into(), Value::Object(error));
        }
    }
    Value::Object(entry)
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
        writer.append_line(&json!({"simtape_llm": 1, "latency": config.latency}).to_string())?;
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
