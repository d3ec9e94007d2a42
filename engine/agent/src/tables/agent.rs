//! Decoding of `[agent]`: the harness under test, its prompts, bounds, retry policy and the
//! tools it offers the model.

use simtape::scenario::decoder::{one_of, Capability, Decoder, Field, Fields};

use super::mcp::{Lookup, Servers};
use crate::spec::{
    AdapterKind, AgentClock, AgentSandbox, AgentSpec, AgentVariant, CommandAgentSpec, ModelIds,
    Permission, ToolSource,
};

/// What `[agent]` decodes to: the built-in loop, or an agent program outside the simulation.
#[derive(Debug)]
pub(crate) enum AgentTable {
    /// `kind = "builtin"` (the default).
    Builtin(AgentSpec),
    /// `kind = "command"`.
    Command(CommandAgentSpec),
}

/// The agent kinds of `[agent] kind`.
const AGENT_KINDS: [(&str, &str); 2] = [("builtin", "builtin"), ("command", "command")];
/// The keys of `[agent] kind = "command"`.
const COMMAND_KEYS: [&str; 15] = [
    "kind",
    "adapter",
    "model",
    "models",
    "command",
    "args",
    "task",
    "env",
    "timeout",
    "settle",
    "permission",
    "clock",
    "sandbox",
    "expose",
    "variant",
];
/// The keys of `[[agent.variant]]`.
const VARIANT_KEYS: [&str; 6] = ["name", "adapter", "model", "command", "args", "env"];
/// What `[agent] model` expects.
const MODEL_NAME: &str = "a model name like \"gpt-4.1\" (the model registry maps it to each \
                          adapter's model id)";
/// The clocks of `[agent] clock`.
const CLOCKS: [(&str, AgentClock); 2] =
    [("host", AgentClock::Host), ("virtual", AgentClock::Virtual)];
/// An external agent's wall-clock limit when `timeout` is not given.
const COMMAND_TIMEOUT_DEFAULT_MS: u64 = 600_000;
/// The permission modes of `[agent] permission`.
const SANDBOXES: [(&str, AgentSandbox); 2] = [("on", AgentSandbox::On), ("off", AgentSandbox::Off)];
const PERMISSIONS: [(&str, Permission); 2] = [
    ("full", Permission::Full),
    ("read-only", Permission::ReadOnly),
];

/// The keys of `[agent]` (the built-in loop).
const AGENT_KEYS: [&str; 10] = [
    "kind",
    "model",
    "system",
    "task",
    "max_turns",
    "tool_concurrency",
    "retry_budget",
    "backoff",
    "backoff_max",
    "tools",
];
/// The model name the requests carry when `model` is not given.
const AGENT_MODEL_DEFAULT: &str = "simtape-agent";
const MAX_TURNS: (i64, i64, u32) = (1, 1000, 20);
const TOOL_CONCURRENCY: (i64, i64, u32) = (1, 64, 4);
const RETRY_BUDGET: (i64, i64, u32) = (0, 1000, 3);
const BACKOFF_DEFAULT_MS: u64 = 500;
const BACKOFF_MAX_DEFAULT_MS: u64 = 30_000;

/// Decodes `[agent]` at `line`; `servers` are the `[[mcp]]` servers its tools may name.
pub(crate) fn agent(
    decoded: &mut Decoder,
    field: &Field<'_>,
    line: u64,
    servers: &Servers,
) -> Option<AgentTable> {
    let what = "an [agent] table like { task = \"Fix the failing test.\" }";
    let mut fields = decoded.table(field, what)?;
    if !decoded.has_table(Capability::Llm) {
        let message = format!(
            "[agent] needs {}: the agent's model answers from its fixture",
            Capability::Llm.table()
        );
        decoded.problem(field.span.clone(), field.path.clone(), message);
    }
    let kind = match fields.take("kind") {
        Some(kind) => choice(decoded, &kind, &AGENT_KINDS, "an agent kind")?,
        None => "builtin",
    };
    if kind == "command" {
        return command(decoded, fields, line).map(AgentTable::Command);
    }
    builtin(decoded, fields, servers).map(AgentTable::Builtin)
}

/// Decodes `[agent] kind = "command"`: an agent program outside the simulation.
fn command(decoded: &mut Decoder, mut fields: Fields<'_>, line: u64) -> Option<CommandAgentSpec> {
    let adapter = match fields.take("adapter") {
        Some(field) => choice(decoded, &field, &AdapterKind::ALL, "an adapter"),
        None => {
            let names: Vec<&str> = AdapterKind::ALL.iter().map(|(name, _)| *name).collect();
            decoded.missing(
                &fields,
                "adapter",
                &format!("an adapter {}", one_of(&names)),
            );
            None
        }
    };
    let model = model_name(decoded, &mut fields);
    let models = match fields.take("models") {
        Some(field) => model_ids(decoded, &field),
        None => Some(ModelIds::new()),
    };
    let program = match fields.take("command") {
        Some(field) => prompt(decoded, &field, "a program path or name", false).map(Some),
        None => Some(None),
    };
    if adapter == Some(AdapterKind::Generic) && matches!(program, Some(None)) {
        decoded.missing(
            &fields,
            "command",
            "the program to run (the generic adapter has no usual binary)",
        );
    }
    let args = match fields.take("args") {
        Some(field) => strings(decoded, &field, "an array of argument strings"),
        None => Some(Vec::new()),
    };
    let task = task(decoded, &mut fields);
    let env = match fields.take("env") {
        Some(field) => environment(decoded, &field),
        None => Some(Vec::new()),
    };
    let timeout_ms = match fields.take("timeout") {
        Some(field) => decoded.duration_ms(&field).and_then(|ms| {
            if ms == 0 {
                decoded.expected(&field, "a timeout longer than 0s");
                return None;
            }
            Some(ms)
        }),
        None => Some(COMMAND_TIMEOUT_DEFAULT_MS),
    };
    let settle_ms = match fields.take("settle") {
        Some(field) => decoded.duration_ms(&field).map(Some),
        None => Some(None),
    };
    let permission = match fields.take("permission") {
        Some(field) => choice(decoded, &field, &PERMISSIONS, "a permission"),
        None => Some(Permission::Full),
    };
    let clock = match fields.take("clock") {
        Some(field) => choice(decoded, &field, &CLOCKS, "a clock"),
        None => Some(AgentClock::Host),
    };
    let sandbox = match fields.take("sandbox") {
        Some(field) => choice(decoded, &field, &SANDBOXES, "a sandbox setting"),
        None => Some(AgentSandbox::On),
    };
    let expose = match fields.take("expose") {
        Some(field) => strings(decoded, &field, "an array of paths to show the program"),
        None => Some(Vec::new()),
    };
    let variants = match fields.take("variant") {
        Some(field) => variants(decoded, &field),
        None => Some(Vec::new()),
    };
    fields.finish(
        decoded,
        &format!(
            "unknown key for kind = \"command\", expected one of {}",
            one_of(&COMMAND_KEYS)
        ),
    );
    Some(CommandAgentSpec {
        adapter: adapter?,
        command: program?,
        args: args?,
        env: env?,
        task: task?,
        timeout_ms: timeout_ms?,
        settle_ms: settle_ms?,
        permission: permission?,
        clock: clock?,
        sandbox: sandbox?,
        expose: expose?,
        line,
        variants: variants?,
        model: model?,
        models: models?,
    })
}

/// `model = "gpt-4.1"`: a name the model registry maps to each adapter's model id.
fn model_name(decoded: &mut Decoder, fields: &mut Fields<'_>) -> Option<Option<String>> {
    match fields.take("model") {
        Some(field) => prompt(decoded, &field, MODEL_NAME, false).map(Some),
        None => Some(None),
    }
}

/// `[agent.models."NAME"]`: for each model name, the model id of each adapter it lists.
fn model_ids(decoded: &mut Decoder, field: &Field<'_>) -> Option<ModelIds> {
    let what = "a table of model names, each a table of adapter = \"model id\" like \
                { \"gpt-4.1\" = { codex = \"gpt-4.1-2025-04-14\" } }";
    let mut names = decoded.table(field, what)?;
    let mut layer = ModelIds::new();
    let mut complete = true;
    for name in names.keys() {
        let Some(ids) = names.take(&name) else {
            continue;
        };
        match adapter_ids(decoded, &ids) {
            Some(ids) => drop(layer.insert(name, ids)),
            None => complete = false,
        }
    }
    complete.then_some(layer)
}

/// One model name's ids: `codex = "gpt-4.1-2025-04-14"`, keyed by adapter name.
fn adapter_ids(
    decoded: &mut Decoder,
    field: &Field<'_>,
) -> Option<std::collections::BTreeMap<AdapterKind, String>> {
    let what = "a table of adapter = \"model id\" like { codex = \"gpt-4.1-2025-04-14\" }";
    let mut fields = decoded.table(field, what)?;
    let mut ids = std::collections::BTreeMap::new();
    let mut complete = true;
    for (name, adapter) in AdapterKind::ALL {
        let Some(id) = fields.take(name) else {
            continue;
        };
        match prompt(decoded, &id, "a model id", false) {
            Some(id) => drop(ids.insert(adapter, id)),
            None => complete = false,
        }
    }
    let names: Vec<&str> = AdapterKind::ALL.iter().map(|(name, _)| *name).collect();
    let unknown = format!("unknown adapter, expected one of {}", one_of(&names));
    fields.finish(decoded, &unknown);
    complete.then_some(ids)
}

/// Decodes `[[agent.variant]]`: other agents for the scenario, each named once.
fn variants(decoded: &mut Decoder, field: &Field<'_>) -> Option<Vec<AgentVariant>> {
    let what = "[[agent.variant]] tables like { name = \"retrying\", args = [\"retrying.py\"] }";
    let items = decoded.array(field, what)?;
    let mut variants: Vec<AgentVariant> = Vec::with_capacity(items.len());
    let mut complete = true;
    for item in &items {
        match variant(decoded, item) {
            Some(variant) if variants.iter().any(|v| v.name == variant.name) => {
                let message = format!("agent variant {:?} is named twice", variant.name);
                decoded.problem(item.span.clone(), item.path.clone(), message);
                complete = false;
            }
            Some(variant) => variants.push(variant),
            None => complete = false,
        }
    }
    complete.then_some(variants)
}

/// Decodes one `[[agent.variant]]`.
fn variant(decoded: &mut Decoder, field: &Field<'_>) -> Option<AgentVariant> {
    let what = "a table like { name = \"retrying\", args = [\"retrying.py\"] }";
    let mut fields = decoded.table(field, what)?;
    let name = match fields.take("name") {
        Some(field) => {
            let name = prompt(decoded, &field, "a variant name", false)?;
            if let Some(problem) = simtape::scenario::name_problem(&name) {
                decoded.expected(&field, &format!("a variant name: {problem}"));
                return None;
            }
            Some(name)
        }
        None => {
            decoded.missing(&fields, "name", "the variant's name (`--agents` names it)");
            None
        }
    };
    let adapter = match fields.take("adapter") {
        Some(field) => choice(decoded, &field, &AdapterKind::ALL, "an adapter").map(Some),
        None => Some(None),
    };
    let model = model_name(decoded, &mut fields);
    let program = match fields.take("command") {
        Some(field) => prompt(decoded, &field, "a program path or name", false).map(Some),
        None => Some(None),
    };
    let args = match fields.take("args") {
        Some(field) => strings(decoded, &field, "an array of argument strings").map(Some),
        None => Some(None),
    };
    let env = match fields.take("env") {
        Some(field) => environment(decoded, &field),
        None => Some(Vec::new()),
    };
    fields.finish(
        decoded,
        &format!(
            "unknown key for [[agent.variant]], expected one of {}",
            one_of(&VARIANT_KEYS)
        ),
    );
    Some(AgentVariant {
        name: name?,
        adapter: adapter?,
        command: program?,
        args: args?,
        env: env?,
        model: model?,
    })
}

/// An array of strings.
fn strings(decoded: &mut Decoder, field: &Field<'_>, what: &str) -> Option<Vec<String>> {
    let items = decoded.array(field, what)?;
    let mut strings = Vec::with_capacity(items.len());
    let mut complete = true;
    for item in &items {
        match decoded.string(item, "a string") {
            Some(text) => strings.push(text.to_string()),
            None => complete = false,
        }
    }
    complete.then_some(strings)
}

/// `env = { NAME = "value" }`, in name order.
fn environment(decoded: &mut Decoder, field: &Field<'_>) -> Option<Vec<(String, String)>> {
    let mut fields = decoded.table(field, "a table of variables like { NAME = \"value\" }")?;
    let mut env = Vec::new();
    let mut complete = true;
    for name in fields.keys() {
        let Some(value) = fields.take(&name) else {
            continue;
        };
        match decoded.string(&value, "a string value") {
            Some(text) => env.push((name, text.to_string())),
            None => complete = false,
        }
    }
    env.sort();
    complete.then_some(env)
}

/// Decodes the built-in loop's keys of `[agent]`.
fn builtin(decoded: &mut Decoder, mut fields: Fields<'_>, servers: &Servers) -> Option<AgentSpec> {
    let model = match fields.take("model") {
        Some(model) => prompt(decoded, &model, "a model name", false),
        None => Some(AGENT_MODEL_DEFAULT.to_string()),
    };
    let system = match fields.take("system") {
        Some(system) => prompt(decoded, &system, "a system prompt string", true),
        None => Some(String::new()),
    };
    let task = task(decoded, &mut fields);
    let max_turns = bounded(decoded, &mut fields, "max_turns", MAX_TURNS);
    let tool_concurrency = bounded(decoded, &mut fields, "tool_concurrency", TOOL_CONCURRENCY);
    let retry_budget = bounded(decoded, &mut fields, "retry_budget", RETRY_BUDGET);
    let backoff = backoff(decoded, &mut fields);
    let tools = match fields.take("tools") {
        Some(tools) => tool_list(decoded, &tools, servers),
        None => Some(default_tools(decoded, servers)),
    };
    fields.finish(
        decoded,
        &format!("unknown key, expected one of {}", one_of(&AGENT_KEYS)),
    );
    let (backoff_base_ms, backoff_max_ms) = backoff?;
    Some(AgentSpec {
        model: model?,
        system: system?,
        task: task?,
        max_turns: max_turns?,
        tool_concurrency: tool_concurrency?,
        retry_budget: retry_budget?,
        backoff_base_ms,
        backoff_max_ms,
        tools: tools?,
    })
}

/// The task prompt: a key every kind of agent needs.
fn task(decoded: &mut Decoder, fields: &mut Fields<'_>) -> Option<String> {
    const TASK: &str = "a task prompt like \"Fix the failing test.\"";
    match fields.take("task") {
        Some(task) => prompt(decoded, &task, TASK, false),
        None => {
            decoded.missing(fields, "task", TASK);
            None
        }
    }
}

/// One of `choices`, by name.
fn choice<T: Copy>(
    decoded: &mut Decoder,
    field: &Field<'_>,
    choices: &[(&str, T)],
    what: &str,
) -> Option<T> {
    let names: Vec<&str> = choices.iter().map(|(name, _)| *name).collect();
    let what = format!("{what} {}", one_of(&names));
    let name = decoded.string(field, &what)?;
    match choices.iter().find(|(known, _)| *known == name) {
        Some((_, value)) => Some(*value),
        None => {
            decoded.expected(field, &what);
            None
        }
    }
}

/// A prompt or name string; `empty` says whether `""` is allowed.
fn prompt(decoded: &mut Decoder, field: &Field<'_>, what: &str, empty: bool) -> Option<String> {
    let text = decoded.string(field, what)?;
    if text.is_empty() && !empty {
        decoded.expected(field, &format!("{what} (not empty)"));
        return None;
    }
    Some(text.to_string())
}

/// An integer key in `low..=high`, `default` when absent.
fn bounded(
    decoded: &mut Decoder,
    fields: &mut Fields<'_>,
    key: &str,
    (low, high, default): (i64, i64, u32),
) -> Option<u32> {
    let Some(field) = fields.take(key) else {
        return Some(default);
    };
    let what = format!("an integer from {low} to {high}");
    decoded
        .integer(&field, low, high, &what)
        .map(|n| u32::try_from(n).expect("the bounds fit in u32"))
}

/// `backoff` and `backoff_max`, in milliseconds, with `backoff <= backoff_max`.
fn backoff(decoded: &mut Decoder, fields: &mut Fields<'_>) -> Option<(u64, u64)> {
    let mut duration = |key: &str, default_ms: u64, decoded: &mut Decoder| match fields.take(key) {
        Some(field) => decoded.duration_ms(&field).map(|ms| (ms, Some(field))),
        None => Some((default_ms, None)),
    };
    let base = duration("backoff", BACKOFF_DEFAULT_MS, decoded);
    let max = duration("backoff_max", BACKOFF_MAX_DEFAULT_MS, decoded);
    let ((base_ms, base), (max_ms, max)) = (base?, max?);
    if base_ms > max_ms {
        let shown = |field: Option<Field<'_>>, default_ms: u64| match field {
            Some(field) => field.found(),
            None => format!("\"{default_ms}ms\" (the default)"),
        };
        let message = format!(
            "expected backoff <= backoff_max, found backoff {} > backoff_max {}",
            shown(base.clone(), BACKOFF_DEFAULT_MS),
            shown(max.clone(), BACKOFF_MAX_DEFAULT_MS),
        );
        // Placed at whichever of the two the file gives, backoff_max first.
        let at = max
            .or(base)
            .expect("one of the two is given when they disagree");
        decoded.problem(at.span, at.path, message);
        return None;
    }
    Some((base_ms, max_ms))
}

/// The tools when `tools` is absent: every configured source, fs, process, then each server
/// in file order.
fn default_tools(decoded: &Decoder, servers: &Servers) -> Vec<ToolSource> {
    let mut tools = Vec::new();
    if decoded.has_table(Capability::Fs) {
        tools.push(ToolSource::Fs);
    }
    if decoded.has_table(Capability::Process) {
        tools.push(ToolSource::Process);
    }
    let names = servers.names.iter().map(|known| known.name.clone());
    tools.extend(names.map(ToolSource::Mcp));
    tools
}

/// `tools = ["fs", "tickets"]`: each a built-in group whose table exists or a server's name,
/// each once.
fn tool_list(
    decoded: &mut Decoder,
    field: &Field<'_>,
    servers: &Servers,
) -> Option<Vec<ToolSource>> {
    let items = decoded.array(field, "an array of tool sources like [\"fs\", \"tickets\"]")?;
    let mut tools = Vec::new();
    let mut complete = true;
    for item in &items {
        match tool_source(decoded, item, servers) {
            Some(tool) if tools.contains(&tool) => {
                decoded.expected(item, "each tool source once");
                complete = false;
            }
            Some(tool) => tools.push(tool),
            None => complete = false,
        }
    }
    complete.then_some(tools)
}

fn tool_source(decoded: &mut Decoder, field: &Field<'_>, servers: &Servers) -> Option<ToolSource> {
    let what = format!(
        "`fs`, `process` or the name of an [[mcp]] server {}",
        servers.known()
    );
    let name = decoded.string(field, &what)?;
    let (tool, needs) = match name {
        "fs" => (ToolSource::Fs, Some(Capability::Fs)),
        "process" => (ToolSource::Process, Some(Capability::Process)),
        name => match servers.lookup(name) {
            Lookup::Unknown => {
                decoded.expected(field, &what);
                return None;
            }
            Lookup::Found(_) | Lookup::Unsure => (ToolSource::Mcp(name.to_string()), None),
        },
    };
    if let Some(capability) = needs.filter(|c| !decoded.has_table(*c)) {
        let message = format!("tool `{name}` needs {}", capability.table());
        decoded.problem(field.span.clone(), field.path.clone(), message);
        return None;
    }
    Some(tool)
}
