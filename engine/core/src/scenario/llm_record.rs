//! `[llm.record]`: how `simtape run --record` records the scenario's model from a real
//! provider into a fixture (the wire format, the base URL, the environment variable that holds
//! the key, the fixture written), checked with the rest of the scenario.
//!
//! The section is a setting, not a mode: a scenario with it still replays its `[llm]`
//! fixture until a run asks to record. Recording goes through the scenario's `[network]`
//! policy, so a policy that denies the provider's host is reported by `simtape check` at the
//! field that names the host, before anything could be dialled. The recorder itself is the
//! gateway's (`simtape-serve`, which reads the key from its caller and holds the HTTP
//! client): the core never reads the environment and dials nothing.

use std::path::PathBuf;

use super::decode::Decoder;
use super::error::Problem;
use super::fields::{one_of, Field};
use super::schema::{PathField, Spec};
use super::tables::path;
use super::Scenario;
use crate::cap::fault_rules::LlmFault;
use crate::cap::llm::{host_and_port, Provider, RecordError};
use crate::cap::net::Network;

/// The keys of `[llm.record]`.
pub(crate) const LLM_RECORD_KEYS: [&str; 4] = ["provider", "base_url", "key_env", "fixture_out"];
/// The wire formats by the names a scenario (and `--record-llm`) gives them.
const PROVIDERS: [(&str, Provider); 3] = [
    ("anthropic", Provider::AnthropicMessages),
    ("openai-chat", Provider::OpenAiChat),
    ("openai-responses", Provider::OpenAiResponses),
];

/// `[llm.record]` as checked.
#[derive(Debug, Clone, PartialEq)]
pub struct LlmRecord {
    provider: Provider,
    base_url: String,
    key_variable: String,
    fixture_out: PathField,
    host: String,
    port: u16,
    /// Where the host is named: `base_url`, or the section when the URL is the default.
    host_field: PathField,
}

impl LlmRecord {
    /// Returns the wire format.
    pub fn provider(&self) -> Provider {
        self.provider
    }

    /// Returns the base URL (the provider's official API unless `base_url` names another).
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// Returns the environment variable the API key is read from (`key_env`, by default
    /// the provider's own: `OPENAI_API_KEY`, `ANTHROPIC_API_KEY`).
    pub fn key_variable(&self) -> &str {
        &self.key_variable
    }
}

/// Decodes `[llm.record]`; `fixture` is `[llm] fixture`, the default of `fixture_out`.
pub(crate) fn decode(
    decoded: &mut Decoder,
    field: &Field<'_>,
    fixture: Option<&PathField>,
) -> Option<LlmRecord> {
    let what = "an [llm.record] table like { provider = \"openai-chat\" }";
    let mut fields = decoded.table(field, what)?;
    let names = PROVIDERS.map(|(name, _)| name);
    let provider_what = format!("a provider wire format, one of {}", one_of(&names));
    let provider = match fields.take("provider") {
        Some(value) => {
            let text = decoded.string(&value, &provider_what);
            let provider = text.and_then(|text| {
                PROVIDERS
                    .iter()
                    .find(|(name, _)| *name == text)
                    .map(|(_, provider)| *provider)
            });
            if text.is_some() && provider.is_none() {
                decoded.expected(&value, &provider_what);
            }
            provider
        }
        None => {
            decoded.missing(&fields, "provider", &provider_what);
            None
        }
    };
    const URL: &str = "an http(s) base URL like \"http://127.0.0.1:4010/v1\"";
    let base_url = match fields.take("base_url") {
        Some(value) => path(decoded, &value, URL).map(Some),
        None => Some(None),
    };
    const KEY: &str = "an environment variable name like \"OPENAI_API_KEY\"";
    let key_env = match fields.take("key_env") {
        Some(value) => {
            let text = decoded.string(&value, KEY);
            let valid = text.filter(|text| variable_name(text));
            if text.is_some() && valid.is_none() {
                decoded.expected(&value, KEY);
            }
            valid.map(|text| Some(text.to_string()))
        }
        None => Some(None),
    };
    const OUT: &str = "a fixture file path relative to the scenario file";
    let fixture_out = match fields.take("fixture_out") {
        Some(value) => path(decoded, &value, OUT),
        None => fixture.cloned(),
    };
    fields.finish(
        decoded,
        &format!("unknown key, expected one of {}", one_of(&LLM_RECORD_KEYS)),
    );
    let provider = provider?;
    let section = PathField {
        path: String::new(),
        span: field.span.clone(),
        field: field.path.clone(),
    };
    let (base_url, host_field) = match base_url? {
        Some(given) => (given.path.clone(), given),
        None => (provider.default_base_url().to_string(), section),
    };
    let (host, port) = match host_and_port(&base_url) {
        Ok(found) => found,
        Err(error) => {
            let message = format!("expected {URL}: {error}");
            decoded.problem(host_field.span.clone(), host_field.field.clone(), message);
            return None;
        }
    };
    Some(LlmRecord {
        provider,
        base_url,
        key_variable: key_env?.unwrap_or_else(|| provider.api_key_variable().to_string()),
        fixture_out: fixture_out?,
        host,
        port,
        host_field,
    })
}

/// `[A-Za-z_][A-Za-z0-9_]*`: what a shell can export.
fn variable_name(text: &str) -> bool {
    let mut chars = text.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A problem when the scenario's `[network]` policy denies the provider's host: recording
/// could only fail at its first model call.
pub(crate) fn policy_problem(spec: &Spec) -> Option<Problem> {
    let record = spec.llm.as_ref()?.record.as_ref()?;
    let network = spec.network.as_ref()?;
    let denied = network.check(&record.host, record.port).err()?;
    Some(Problem {
        span: record.host_field.span.clone(),
        field: record.host_field.field.clone(),
        message: format!(
            "recording calls {}:{}, which the [network] policy denies ({denied}); allow it in \
             [network] allow",
            record.host, record.port
        ),
    })
}

impl Scenario {
    /// Returns whether the scenario has a model (`[llm]`).
    pub fn has_llm(&self) -> bool {
        self.spec.llm.is_some()
    }

    /// Returns the model call `[llm.handover]` switches fixtures at, when the scenario has one.
    pub fn llm_handover_call(&self) -> Option<u64> {
        Some(self.spec.llm.as_ref()?.handover.as_ref()?.from_call)
    }

    /// Returns `[llm.record]`, when the scenario has one.
    pub fn llm_record(&self) -> Option<&LlmRecord> {
        self.spec.llm.as_ref()?.record.as_ref()
    }

    /// Returns the fixture file `[llm.record]` writes, resolved against the scenario file's
    /// directory (`fixture_out`, by default the `[llm]` fixture itself).
    pub fn llm_record_out(&self) -> Option<PathBuf> {
        let record = self.llm_record()?;
        let base = self.path().parent().unwrap_or(std::path::Path::new(""));
        Some(base.join(&record.fixture_out.path))
    }

    /// Returns the network policy a recording of `[llm.record]` dials through: the
    /// scenario's `[network]`, or, without one, a policy that allows the provider's host
    /// alone; `None` without the section.
    pub fn llm_record_network(&self) -> Option<Result<Network, RecordError>> {
        let record = self.llm_record()?;
        Some(match &self.spec.network {
            Some(network) => Ok(network.clone()),
            None => {
                Network::deny()
                    .try_allow(&record.host)
                    .map_err(|error| RecordError::BadBaseUrl {
                        url: record.base_url.clone(),
                        reason: error.to_string(),
                    })
            }
        })
    }

    /// Returns the scenario's `[[faults.llm]]` rules: a record-mode model applies them as a
    /// replay does, so the replay of the fixture fails the same calls.
    pub fn llm_faults(&self) -> &[LlmFault] {
        &self.spec.faults.llm
    }
}
