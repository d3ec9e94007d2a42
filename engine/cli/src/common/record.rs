//! Recording a run's model calls from a real provider into a fixture (`--record-llm`), shared
//! by `run` and `serve`; and `run --record`, which switches every replay source a scenario
//! has to record.

use std::path::{Path, PathBuf};

use simtape::cap::llm::{LlmActor, Provider};
use simtape_agent::{EvalScenario, McpSource};
use simtape_serve::outside::{ProcessTapeWriter, RecordConfig};

use crate::exit::CliError;

/// The wire format `--record-llm` records through.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub(crate) enum RecordProvider {
    /// Anthropic Messages.
    Anthropic,
    /// OpenAI Chat Completions.
    #[value(alias = "openai")]
    OpenaiChat,
    /// OpenAI Responses.
    OpenaiResponses,
}

impl RecordProvider {
    /// Returns the wire format this names.
    pub(crate) fn provider(self) -> Provider {
        match self {
            RecordProvider::Anthropic => Provider::AnthropicMessages,
            RecordProvider::OpenaiChat => Provider::OpenAiChat,
            RecordProvider::OpenaiResponses => Provider::OpenAiResponses,
        }
    }

    /// Returns the name the flags take.
    pub(crate) fn name(self) -> &'static str {
        match self {
            RecordProvider::Anthropic => "anthropic",
            RecordProvider::OpenaiChat => "openai-chat",
            RecordProvider::OpenaiResponses => "openai-responses",
        }
    }
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
    let provider = provider.provider();
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
    simtape_serve::outside::record(config)
        .map(Some)
        .map_err(|e| CliError::Input(format!("--record-llm: {e}")))
}

/// What `run --record` set up: the run's builder, and the files the run writes.
pub(crate) struct Recording {
    pub(crate) builder: simtape::Builder,
    pub(crate) files: Vec<PathBuf>,
}

/// Switches every replay source of `eval` to record (`simtape run --record`): the model
/// through `[llm.record]` (its key from simtape's own environment, read here and nowhere
/// else), programs in replay mode to record mode (their process tape rewritten in place, or
/// `<record dir>/<name>.process.jsonl`). MCP cassettes are refused: the scenario names no
/// server to run. Everything is checked before a file is truncated or anything is dialled.
pub(crate) fn record_sources(
    eval: &EvalScenario,
    shown: &Path,
    seed: u64,
    record_dir: Option<&Path>,
) -> Result<Recording, CliError> {
    let scenario = eval.scenario();
    let refuse = |why: String| CliError::Usage(format!("--record: {}: {why}", shown.display()));
    if let Some(server) = eval
        .eval()
        .mcp
        .iter()
        .find_map(|server| match &server.source {
            McpSource::Cassette(path) => Some((&server.name, path)),
            McpSource::World(_) => None,
        })
    {
        return Err(refuse(format!(
            "[[mcp]] {:?} replays the cassette {}, and a scenario names no MCP server to run, \
             so `run` cannot record it (it records the model and programs only); record the \
             cassette on its own with `simtape mcp record --out {} -- SERVER COMMAND` \
             (docs/mcp.md), and run --record on a copy of the scenario without that server",
            server.0,
            server.1.display(),
            server.1.display()
        )));
    }
    let key = match (scenario.has_llm(), scenario.llm_record()) {
        (false, _) => None,
        (true, None) => {
            return Err(refuse(
                "[llm] replays a fixture, but the scenario has no [llm.record] section to \
                 record it with; add one, like [llm.record] provider = \"openai-chat\" \
                 (docs/scenario-format.md)"
                    .into(),
            ))
        }
        // The key is read here, in the CLI: the simulation never reads the environment.
        (true, Some(record)) => match std::env::var(record.key_variable()) {
            Ok(key) if !key.is_empty() => Some(key),
            _ => {
                return Err(refuse(format!(
                    "[llm.record] reads the API key from {}, which is not set in simtape's \
                     environment (set it; any value for a local provider that checks none)",
                    record.key_variable()
                )))
            }
        },
    };
    let replays = scenario.replays_processes() || scenario.records_processes();
    if key.is_none() && !replays {
        return Err(refuse(
            "nothing to record: no [llm] fixture and no [process] program in replay mode".into(),
        ));
    }
    let mut files = Vec::new();
    let mut builder = match key {
        Some(key) => {
            let llm = simtape_serve::outside::scenario_recorder(scenario, key)
                .expect("the scenario has [llm.record]")
                .map_err(|e| CliError::Input(format!("--record: [llm.record]: {e}")))?;
            files.extend(scenario.llm_record_out());
            eval.builder_with_llm(seed, llm)
        }
        None => eval.builder(seed),
    };
    if replays {
        let path = match (record_dir, scenario.process_tape_path()) {
            (None, Some(tape)) => tape,
            (dir, _) => {
                let dir = dir.map_or_else(
                    || shown.parent().unwrap_or(Path::new("")).to_path_buf(),
                    Path::to_path_buf,
                );
                std::fs::create_dir_all(&dir).map_err(CliError::io(&dir))?;
                dir.join(format!("{}.process.jsonl", scenario.name()))
            }
        };
        let tape = ProcessTapeWriter::create(&path)
            .map_err(|error| CliError::Input(format!("{}: {error}", path.display())))?;
        builder.process_record_replayed(tape);
        files.push(path);
    }
    Ok(Recording { builder, files })
}
