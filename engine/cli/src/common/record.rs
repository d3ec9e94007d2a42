//! Recording a run's model calls from a real provider into a fixture (`--record-llm`), shared
//! by `run` and `serve`.

use std::path::PathBuf;

use simtape::cap::llm::{Llm, LlmActor, Provider, RecordConfig};

use crate::exit::CliError;

/// The wire format `--record-llm` records through.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub(crate) enum RecordProvider {
    /// Anthropic Messages.
    Anthropic,
    /// OpenAI Chat Completions.
    OpenaiChat,
    /// OpenAI Responses.
    OpenaiResponses,
}

/// The flags that turn a run's model from replay into record.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct RecordLlmArgs {
    /// Record instead of replaying: every model call goes to this provider's real API (its
    /// key from ANTHROPIC_API_KEY / OPENAI_API_KEY in simtape's own environment) and is
    /// appended to --fixture-out, a fixture the scenario can then replay.
    #[arg(long, value_enum, value_name = "PROVIDER", requires = "fixture_out")]
    pub(crate) record_llm: Option<RecordProvider>,
    /// The fixture file --record-llm writes (created or truncated).
    #[arg(long, value_name = "PATH", requires = "record_llm")]
    pub(crate) fixture_out: Option<PathBuf>,
    /// The provider's base URL for --record-llm, as its SDK takes it (default: the official
    /// API; `http://127.0.0.1:4010/v1` for an OpenAI-compatible local server).
    #[arg(long, value_name = "URL", requires = "record_llm")]
    pub(crate) upstream: Option<String>,
}

/// Returns the record-mode model `args` ask for, or `None` when they ask for none: calls go to
/// the provider's API (the network policy allows its host alone) and land in `--fixture-out`.
/// Everything is checked before anything is dialled.
pub(crate) fn recorder(args: &RecordLlmArgs) -> Result<Option<LlmActor>, CliError> {
    let Some(provider) = args.record_llm else {
        return Ok(None);
    };
    let provider = match provider {
        RecordProvider::Anthropic => Provider::AnthropicMessages,
        RecordProvider::OpenaiChat => Provider::OpenAiChat,
        RecordProvider::OpenaiResponses => Provider::OpenAiResponses,
    };
    let fixture = args
        .fixture_out
        .clone()
        .expect("clap requires --fixture-out with --record-llm");
    let base_url = args
        .upstream
        .clone()
        .unwrap_or_else(|| provider.default_base_url().to_string());
    let host = base_url
        .split("://")
        .nth(1)
        .and_then(|rest| rest.split(['/', ':']).next())
        .filter(|host| !host.is_empty())
        .ok_or_else(|| {
            CliError::Usage(format!(
                "--upstream {base_url}: expected an http(s) URL with a host"
            ))
        })?;
    let network = simtape::cap::net::Network::deny().allow(host);
    // The key is read here, in the CLI: the simulation never reads the environment.
    let api_key = std::env::var(provider.api_key_variable()).unwrap_or_default();
    let config = RecordConfig::new(provider, fixture, network)
        .with_base_url(base_url.clone())
        .with_api_key(api_key);
    Llm::record(config)
        .map(Some)
        .map_err(|e| CliError::Input(format!("--record-llm: {e}")))
}
