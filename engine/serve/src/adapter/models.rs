//! The model registry: one model name (`[agent] model = "gpt-4.1"`) to the model id each
//! adapter passes its CLI, in three layers consulted in order:
//!
//! 1. the scenario's `[agent.models."NAME"]` (`CommandAgentSpec::models`);
//! 2. the project's `simtape.toml`, its `[models."NAME"]`, found from the scenario's directory
//!    upward (the first one found; the search stops at a repository's root, a directory with
//!    `.git`);
//! 3. the built-in table below.
//!
//! The first layer that lists the adapter for the name decides; a name no layer maps for the
//! adapter is the scenario's to fix (exit 2, naming the model, the adapter and the layers
//! consulted). Without a name each adapter names its own default. The id decides what the
//! agent asks for, so it reaches the tape in every request (the body's `model`, or the path of
//! a Gemini call), where fixtures may match on it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use simtape_agent::{AdapterKind, CommandAgentSpec, ModelIds};

/// The project configuration file's name.
pub const PROJECT_FILE: &str = "simtape.toml";

/// Who serves a built-in model, which decides the adapters that can name it: Claude Code
/// speaks only Anthropic's Messages API, Gemini CLI only Google's; the others reach any model
/// through an OpenAI-compatible provider (as a gateway such as simtape's serves them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Vendor {
    Anthropic,
    Google,
    /// Reached only through an OpenAI-compatible provider.
    OpenAiCompatible,
}

/// The built-in layer: a model name, its id, and who serves it.
const BUILT_IN: [(&str, &str, Vendor); 11] = [
    // The id the OpenAI-compatible adapters name when the scenario names no model.
    ("simtape", "simtape", Vendor::OpenAiCompatible),
    ("gpt-4.1", "gpt-4.1", Vendor::OpenAiCompatible),
    ("gpt-4.1-mini", "gpt-4.1-mini", Vendor::OpenAiCompatible),
    ("gpt-5", "gpt-5", Vendor::OpenAiCompatible),
    ("o4-mini", "o4-mini", Vendor::OpenAiCompatible),
    (
        "claude-sonnet-4",
        "claude-sonnet-4-20250514",
        Vendor::Anthropic,
    ),
    (
        "claude-sonnet-4-5",
        "claude-sonnet-4-5-20250929",
        Vendor::Anthropic,
    ),
    ("claude-opus-4", "claude-opus-4-20250514", Vendor::Anthropic),
    ("gemini-2.5-pro", "gemini-2.5-pro", Vendor::Google),
    ("gemini-2.5-flash", "gemini-2.5-flash", Vendor::Google),
    (
        "qwen3-coder-plus",
        "qwen3-coder-plus",
        Vendor::OpenAiCompatible,
    ),
];

/// Returns the id `adapter` names when the scenario names no model; `None`: the CLI's own
/// default (no flag), or for a generic program no `SIMTAPE_MODEL`.
pub fn default_id(adapter: AdapterKind) -> Option<&'static str> {
    match adapter {
        AdapterKind::ClaudeCode | AdapterKind::Generic => None,
        // A provider named `simtape` whose model is `simtape` (the adapters configure both).
        AdapterKind::Codex | AdapterKind::Opencode => Some("simtape"),
        // Models these CLIs know (their limits and defaults); without one Gemini CLI asks a
        // router model which to use before every turn.
        AdapterKind::GeminiCli => Some("gemini-2.5-flash"),
        AdapterKind::QwenCode => Some("qwen3-coder-plus"),
        // One Copilot CLI knows (its token limits), as Cline does; neither names a model of
        // its own on a custom provider.
        AdapterKind::Copilot | AdapterKind::Cline => Some("gpt-4.1"),
        // litellm's `openai/` provider, at OPENAI_BASE_URL.
        AdapterKind::MiniSweAgent | AdapterKind::Aider => Some("openai/simtape"),
    }
}

/// Returns the built-in layer's id of `name` for `adapter`.
fn built_in(name: &str, adapter: AdapterKind) -> Option<String> {
    if adapter == AdapterKind::Generic {
        // A generic program reads the name in SIMTAPE_MODEL and decides itself.
        return Some(name.to_string());
    }
    let (_, id, vendor) = BUILT_IN.iter().find(|(known, _, _)| *known == name)?;
    match (adapter, vendor) {
        (AdapterKind::ClaudeCode, Vendor::Anthropic) => Some(id.to_string()),
        (AdapterKind::ClaudeCode, _) => None,
        (AdapterKind::GeminiCli, Vendor::Google) => Some(id.to_string()),
        (AdapterKind::GeminiCli, _) => None,
        (AdapterKind::MiniSweAgent | AdapterKind::Aider, _) => Some(format!("openai/{id}")),
        _ => Some(id.to_string()),
    }
}

/// A model name, or the project file, the registry cannot use: the scenario's to fix.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// No layer maps the name for the adapter.
    #[error(
        "model {name:?} has no model id for the {adapter} adapter: consulted {consulted}; add \
         `{adapter} = \"MODEL-ID\"` under [agent.models.{name:?}] in the scenario or \
         [models.{name:?}] in {PROJECT_FILE} (built-in names: {known})"
    )]
    Unknown {
        /// The model name.
        name: String,
        /// The adapter's name.
        adapter: &'static str,
        /// The layers consulted, in order, each with what it holds for the name.
        consulted: String,
        /// The built-in layer's names.
        known: String,
    },
    /// The project file could not be read, or is not a model registry.
    #[error("{}: {message}", .path.display())]
    Project {
        /// The file.
        path: PathBuf,
        /// What is wrong (with its line where one is known).
        message: String,
    },
}

/// The project's layer: `[models."NAME"]` tables of `adapter = "model id"` in a
/// [`PROJECT_FILE`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectModels {
    /// The file it was read from.
    pub path: PathBuf,
    /// Its layer.
    pub models: ModelIds,
}

impl ProjectModels {
    /// Finds the [`PROJECT_FILE`] that governs `dir` (the scenario's directory) and reads it;
    /// `None` when there is none.
    pub fn find(dir: &Path) -> Result<Option<ProjectModels>, ModelError> {
        let dir = if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        };
        let start = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
        for dir in start.ancestors() {
            let path = dir.join(PROJECT_FILE);
            if path.is_file() {
                // Read within the scenario's size cap: it is a scenario's companion.
                let kind = simtape::limits::InputFile::Scenario;
                let text = simtape::input::read_input_text(&path, kind).map_err(|error| {
                    let message = format!("cannot be read: {error}");
                    ModelError::Project {
                        path: path.clone(),
                        message,
                    }
                })?;
                return ProjectModels::parse(&path, &text).map(Some);
            }
            // A repository's root bounds the project: no file above it governs it.
            if dir.join(".git").exists() {
                break;
            }
        }
        Ok(None)
    }

    /// Reads `text`, the file at `path`.
    pub fn parse(path: &Path, text: &str) -> Result<ProjectModels, ModelError> {
        type Layer = BTreeMap<String, BTreeMap<toml::Spanned<String>, toml::Spanned<String>>>;
        #[derive(serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        struct File {
            #[serde(default)]
            models: Layer,
        }
        let problem = |message: String| ModelError::Project {
            path: path.to_path_buf(),
            message,
        };
        let file: File = toml::from_str(text).map_err(|error| {
            let message = error.message().to_string();
            let line = error.span().map(|span| line_of(text, span.start));
            problem(match line {
                Some(line) => format!("line {line}: {message}"),
                None => message,
            })
        })?;
        let mut models = ModelIds::new();
        for (name, ids) in file.models {
            let mut layer = BTreeMap::new();
            for (adapter, id) in ids {
                let line = line_of(text, adapter.span().start);
                let known = AdapterKind::ALL
                    .iter()
                    .find(|(n, _)| n == adapter.get_ref());
                let Some(&(_, kind)) = known else {
                    let names: Vec<&str> = AdapterKind::ALL.iter().map(|(n, _)| *n).collect();
                    return Err(problem(format!(
                        "line {line}: models.{name:?}.{}: unknown adapter, expected one of {}",
                        adapter.get_ref(),
                        names.join(", ")
                    )));
                };
                if id.get_ref().is_empty() {
                    return Err(problem(format!(
                        "line {line}: models.{name:?}.{}: expected a model id (not empty)",
                        adapter.get_ref()
                    )));
                }
                layer.insert(kind, id.into_inner());
            }
            models.insert(name, layer);
        }
        Ok(ProjectModels {
            path: path.to_path_buf(),
            models,
        })
    }
}

/// The 1-based line of byte `at` in `text`.
fn line_of(text: &str, at: usize) -> usize {
    text[..at.min(text.len())].matches('\n').count() + 1
}

/// Returns the model id `spec`'s adapter passes its CLI: by `spec.model` through the three
/// layers, or the adapter's default when the scenario names no model. `None`: no id (the
/// CLI's own default).
pub fn resolve(
    spec: &CommandAgentSpec,
    project: Option<&ProjectModels>,
) -> Result<Option<String>, ModelError> {
    let adapter = spec.adapter;
    let Some(name) = &spec.model else {
        return Ok(default_id(adapter).map(String::from));
    };
    let in_layer = |layer: &ModelIds| layer.get(name).and_then(|ids| ids.get(&adapter)).cloned();
    let found = in_layer(&spec.models)
        .or_else(|| project.and_then(|project| in_layer(&project.models)))
        .or_else(|| built_in(name, adapter));
    found.map(Some).ok_or_else(|| unknown(spec, name, project))
}

/// The error for `name`, which no layer maps for `spec`'s adapter: each layer consulted with
/// the adapters it maps the name for.
fn unknown(spec: &CommandAgentSpec, name: &str, project: Option<&ProjectModels>) -> ModelError {
    let listed = |ids: Option<&BTreeMap<AdapterKind, String>>| match ids {
        Some(ids) if !ids.is_empty() => {
            let adapters: Vec<&str> = ids.keys().map(|adapter| adapter.name()).collect();
            format!("maps it for {}", adapters.join(", "))
        }
        _ => "does not name it".to_string(),
    };
    let mut consulted = vec![format!(
        "the scenario's [agent.models] ({})",
        listed(spec.models.get(name))
    )];
    match project {
        Some(project) => consulted.push(format!(
            "{} ({})",
            project.path.display(),
            listed(project.models.get(name))
        )),
        None => consulted.push(format!("no {PROJECT_FILE} (none found)")),
    }
    let adapters: BTreeMap<AdapterKind, String> = AdapterKind::ALL
        .iter()
        .filter(|(_, kind)| *kind != AdapterKind::Generic)
        .filter_map(|&(_, kind)| built_in(name, kind).map(|id| (kind, id)))
        .collect();
    consulted.push(format!(
        "the built-in registry ({})",
        listed(Some(&adapters))
    ));
    let known: Vec<&str> = BUILT_IN.iter().map(|(known, _, _)| *known).collect();
    ModelError::Unknown {
        name: name.to_string(),
        adapter: spec.adapter.name(),
        consulted: consulted.join(", "),
        known: known.join(", "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(adapter: AdapterKind, model: Option<&str>) -> CommandAgentSpec {
        CommandAgentSpec {
            adapter,
            command: None,
            args: Vec::new(),
            env: Vec::new(),
            task: "t".into(),
            timeout_ms: 1000,
            settle_ms: None,
            permission: simtape_agent::Permission::Full,
            clock: simtape_agent::AgentClock::Host,
            sandbox: simtape_agent::AgentSandbox::On,
            expose: Vec::new(),
            line: 1,
            variants: Vec::new(),
            model: model.map(String::from),
            models: ModelIds::new(),
        }
    }

    fn layer(name: &str, ids: &[(AdapterKind, &str)]) -> ModelIds {
        let ids = ids.iter().map(|(kind, id)| (*kind, id.to_string()));
        ModelIds::from([(name.to_string(), ids.collect())])
    }

    #[test]
    fn one_name_gives_each_adapter_its_own_id() {
        // Goal: the built-in layer maps a name to the id each CLI takes: litellm's prefix for
        // mini-swe-agent and Aider, the dated id for Claude Code, the name itself for a
        // generic program.
        let ids = |name: &str| -> Vec<Option<String>> {
            AdapterKind::ALL
                .iter()
                .map(|&(_, kind)| resolve(&spec(kind, Some(name)), None).ok().flatten())
                .collect()
        };
        let some = |id: &str| Some(id.to_string());
        assert_eq!(
            ids("gpt-4.1"),
            [
                None,
                some("gpt-4.1"),
                some("gpt-4.1"),
                None,
                some("gpt-4.1"),
                some("openai/gpt-4.1"),
                some("openai/gpt-4.1"),
                some("gpt-4.1"),
                some("gpt-4.1"),
                some("gpt-4.1"),
            ]
        );
        assert_eq!(ids("claude-sonnet-4")[0], some("claude-sonnet-4-20250514"));
        assert_eq!(ids("gemini-2.5-flash")[3], some("gemini-2.5-flash"));
        assert_eq!(ids("house-model")[9], some("house-model"));
        assert_eq!(ids("house-model")[7], None);
    }

    #[test]
    fn the_scenario_wins_over_the_project_which_wins_over_the_built_in() {
        // Goal: precedence scenario > project > built-in, per adapter: a layer that does not
        // list the adapter leaves it to the next.
        let project = ProjectModels {
            path: PathBuf::from("/p/simtape.toml"),
            models: layer(
                "gpt-4.1",
                &[
                    (AdapterKind::Codex, "gpt-4.1-project"),
                    (AdapterKind::QwenCode, "qwen-project"),
                ],
            ),
        };
        let mut codex = spec(AdapterKind::Codex, Some("gpt-4.1"));
        codex.models = layer("gpt-4.1", &[(AdapterKind::Codex, "gpt-4.1-scenario")]);
        let resolved = resolve(&codex, Some(&project)).unwrap();
        assert_eq!(resolved.as_deref(), Some("gpt-4.1-scenario"));
        codex.models = ModelIds::new();
        let resolved = resolve(&codex, Some(&project)).unwrap();
        assert_eq!(resolved.as_deref(), Some("gpt-4.1-project"));
        let aider = spec(AdapterKind::Aider, Some("gpt-4.1"));
        let resolved = resolve(&aider, Some(&project)).unwrap();
        assert_eq!(resolved.as_deref(), Some("openai/gpt-4.1"));
    }

    #[test]
    fn no_name_is_each_adapters_default() {
        let codex = resolve(&spec(AdapterKind::Codex, None), None).unwrap();
        assert_eq!(codex.as_deref(), Some("simtape"));
        let claude = resolve(&spec(AdapterKind::ClaudeCode, None), None).unwrap();
        assert_eq!(claude, None);
    }

    #[test]
    fn an_unmapped_name_names_the_model_the_adapter_and_every_layer() {
        // Goal: Claude Code speaks only Anthropic's API, so the built-in layer has no id of
        // gpt-4.1 for it; the error says which layers were consulted and what each maps.
        let project = ProjectModels {
            path: PathBuf::from("/p/simtape.toml"),
            models: layer("gpt-4.1", &[(AdapterKind::Codex, "x")]),
        };
        let claude = spec(AdapterKind::ClaudeCode, Some("gpt-4.1"));
        let error = resolve(&claude, Some(&project)).unwrap_err().to_string();
        assert_eq!(
            error,
            "model \"gpt-4.1\" has no model id for the claude-code adapter: consulted the \
             scenario's [agent.models] (does not name it), /p/simtape.toml (maps it for codex), \
             the built-in registry (maps it for codex, opencode, qwen-code, mini-swe-agent, \
             aider, copilot, cline); add `claude-code = \"MODEL-ID\"` under [agent.models.\"gpt-4.1\"] in the \
             scenario or [models.\"gpt-4.1\"] in simtape.toml (built-in names: simtape, \
             gpt-4.1, gpt-4.1-mini, gpt-5, o4-mini, claude-sonnet-4, claude-sonnet-4-5, \
             claude-opus-4, gemini-2.5-pro, gemini-2.5-flash, qwen3-coder-plus)"
        );
        let error = resolve(&spec(AdapterKind::Codex, Some("nope")), None).unwrap_err();
        assert!(
            error.to_string().contains("no simtape.toml (none found)"),
            "{error}"
        );
    }

    #[test]
    fn the_project_file_is_read_and_its_mistakes_named_by_line() {
        let path = Path::new("/p/simtape.toml");
        let text = "[models.\"gpt-4.1\"]\ncodex = \"a\"\nqwen-code = \"b\"\n";
        let project = ProjectModels::parse(path, text).unwrap();
        assert_eq!(
            project.models,
            layer(
                "gpt-4.1",
                &[(AdapterKind::Codex, "a"), (AdapterKind::QwenCode, "b")]
            )
        );
        let bad = |text: &str| ProjectModels::parse(path, text).unwrap_err().to_string();
        let unknown = bad("[models.m]\n\nkodex = \"a\"\n");
        assert!(
            unknown.starts_with("/p/simtape.toml: line 3: models.\"m\".kodex: unknown adapter"),
            "{unknown}"
        );
        let typo = bad("[model.m]\ncodex = \"a\"\n");
        assert!(typo.contains("line 1") && typo.contains("model"), "{typo}");
        let number = bad("[models.m]\ncodex = 4\n");
        assert!(number.contains("line 2"), "{number}");
    }

    #[test]
    fn the_documented_project_file_reads() {
        // Goal: docs/agents.md's simtape.toml example is a registry file.
        let doc = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/agents.md");
        let text = std::fs::read_to_string(doc).unwrap();
        let start = text.find("# simtape.toml at the project's root").unwrap();
        let end = start + text[start..].find("```").unwrap();
        let project = ProjectModels::parse(Path::new("simtape.toml"), &text[start..end]).unwrap();
        let codex = &project.models["gpt-4.1"][&AdapterKind::Codex];
        assert_eq!(codex, "gpt-4.1-2025-04-14");
        assert_eq!(project.models["team-model"].len(), 1);
    }

    #[test]
    fn the_project_file_is_found_upward_and_not_past_a_repository() {
        let root = std::env::temp_dir().join(format!("simtape-models-{}", std::process::id()));
        let deep = root.join("repo/a/b");
        std::fs::create_dir_all(&deep).unwrap();
        std::fs::write(root.join(PROJECT_FILE), "[models.m]\ncodex = \"outer\"\n").unwrap();
        let found = ProjectModels::find(&deep).unwrap().unwrap();
        assert_eq!(found.path, root.join(PROJECT_FILE));
        std::fs::create_dir_all(root.join("repo/.git")).unwrap();
        assert_eq!(ProjectModels::find(&deep).unwrap(), None);
        std::fs::write(
            root.join("repo/a/simtape.toml"),
            "[models.m]\ncodex = \"in\"\n",
        )
        .unwrap();
        let found = ProjectModels::find(&deep).unwrap().unwrap();
        assert_eq!(found.models["m"][&AdapterKind::Codex], "in");
        std::fs::remove_dir_all(&root).unwrap();
    }
}
