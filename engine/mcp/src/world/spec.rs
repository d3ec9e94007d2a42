//! The world spec file: parse, check, compile. Every problem is reported with where it is:
//! line and column for JSON and shape errors, a JSON pointer into the spec for the rest.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::effects::Operation;
use super::faults::ToolFault;
use super::pointer::{tokens, PATH_DEPTH_MAX};
use super::template::placeholders;
use simtape::cap::fault_rules::Trigger;

/// The value of the optional `format` field (specs without it are accepted).
pub const SPEC_FORMAT: &str = "simtape-mcp-world/1";

/// A world spec as written in the file.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorldSpec {
    /// An editor hint (`docs/world-spec.schema.json`); ignored.
    #[serde(rename = "$schema", default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<String>,
    /// `simtape-mcp-world/1` when present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    /// The world's name (the MCP server name too).
    pub name: String,
    /// The world's version (the MCP server version).
    #[serde(default = "default_version")]
    pub version: String,
    /// What the world is; served as the MCP `instructions`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// The default seed (`--seed` overrides it).
    #[serde(default)]
    pub seed: u64,
    /// The state the world starts in.
    pub initial_state: Value,
    /// The tools, served in this order.
    pub tools: Vec<ToolSpec>,
    /// Injected faults, first match wins.
    #[serde(default)]
    pub faults: Vec<ToolFault>,
    /// What a successful run ends with.
    pub goal: GoalSpec,
    /// The virtual latency of every answer inside a simulation (a tool's own `latency`
    /// overrides it); `simtape mcp world` answers in real time and ignores it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<LatencySpec>,
}

/// The seeded latency model of a world inside a simulation: each answer takes
/// `base_ms + jitter`, with `jitter` drawn uniformly from `0..=jitter_ms` on the actor's own
/// random stream (no draw when `jitter_ms` is 0). Integer milliseconds, no floats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LatencySpec {
    /// The fixed part, in milliseconds (default 0 when the object is given).
    #[serde(default)]
    pub base_ms: u64,
    /// The largest extra delay, in milliseconds (default 0).
    #[serde(default)]
    pub jitter_ms: u64,
}

impl LatencySpec {
    /// The model when neither the tool nor the world gives one: 1 ms flat.
    pub const DEFAULT: LatencySpec = LatencySpec {
        base_ms: 1,
        jitter_ms: 0,
    };
}

fn default_version() -> String {
    "1.0.0".into()
}

/// One tool as written in the spec.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolSpec {
    /// The tool name.
    pub name: String,
    /// A display title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the tool does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The JSON Schema every call's arguments are checked against.
    #[serde(rename = "inputSchema")]
    pub input_schema: Value,
    /// The JSON Schema the structured result conforms to.
    #[serde(
        rename = "outputSchema",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub output_schema: Option<Value>,
    /// MCP tool annotations, served as written (any key).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Value>,
    /// The operations a call applies, in order.
    #[serde(default)]
    pub effects: Vec<Operation>,
    /// The structured result template; default: the values `read` bound, or `{"ok": true}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// This tool's latency model inside a simulation; overrides the world's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<LatencySpec>,
}

/// The goal as written in the spec.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GoalSpec {
    /// What the task is, for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The checks on the final state.
    pub assertions: Vec<Assertion>,
    /// Path patterns the task may change besides the asserted paths (`*`, final `**`).
    #[serde(default)]
    pub allow: Vec<String>,
}

/// One goal check on the final state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Assertion {
    /// A JSON pointer into the final state.
    pub path: String,
    /// The value must equal this (compared as JSON values).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub equals: Option<Value>,
    /// `true`: something must be at `path`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exists: Option<bool>,
    /// `true`: nothing may be at `path`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub absent: Option<bool>,
}

/// Keeps `"equals": null` as `Some(Null)` (a plain `Option<Value>` would read it as absent).
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// Why a spec cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SpecError {
    /// The file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The spec path.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not valid JSON or has the wrong shape (serde names line and column).
    #[error("{path}: {message}")]
    Parse {
        /// The spec path.
        path: PathBuf,
        /// What and where.
        message: String,
    },
    /// A value in the spec is unusable; `at` is a JSON pointer into the spec.
    #[error("{path}: at {at}: {message}")]
    Invalid {
        /// The spec path.
        path: PathBuf,
        /// Where in the spec, as a JSON pointer.
        at: String,
        /// What is wrong.
        message: String,
    },
}

/// A compiled tool: the spec plus its schema validators.
#[derive(Debug, Clone)]
pub struct Tool {
    /// The tool as written.
    pub spec: ToolSpec,
    /// The compiled `inputSchema`.
    pub input: jsonschema::Validator,
    /// The compiled `outputSchema`, if any.
    pub output: Option<jsonschema::Validator>,
}

/// A checked, compiled world: ready to serve and to score.
#[derive(Debug, Clone)]
pub struct World {
    /// The spec as written.
    pub spec: WorldSpec,
    /// The tools with their validators, in spec order.
    pub tools: Vec<Tool>,
}

impl World {
    /// Loads, checks and compiles the spec at `path`.
    pub fn load(path: &Path) -> Result<World, SpecError> {
        let text = simtape::input::read_input_text(path, simtape::limits::InputFile::WorldSpec)
            .map_err(|error| SpecError::Io {
                path: path.to_path_buf(),
                source: error.into_io(),
            })?;
        World::parse(&text, path)
    }

    /// Adds the run's fault plan to the spec's own fault rules (after them, so the spec's
    /// rules keep their fault streams and draws), and checks the result like a spec.
    ///
    /// ```
    /// use simtape_mcp::world::{faults::{FaultKind, ToolFault}, World};
    /// let text = r#"{"name": "w", "initial_state": {}, "goal": {"assertions": []},
    ///     "tools": [{"name": "t", "inputSchema": {"type": "object"}}]}"#;
    /// let world = World::parse(text, "w.json".as_ref()).unwrap();
    /// let plan = vec![ToolFault {
    ///     tool: "t".into(),
    ///     trigger: simtape::cap::fault_rules::Trigger::OnCall(1),
    ///     fault: FaultKind::ToolError { message: "disk full".into() },
    /// }];
    /// assert_eq!(world.with_faults(plan).unwrap().spec.faults.len(), 1);
    /// ```
    pub fn with_faults(mut self, plan: Vec<ToolFault>) -> Result<World, SpecError> {
        self.spec.faults.extend(plan);
        check(&self.spec).map_err(|(at, message)| SpecError::Invalid {
            path: "<the run's fault plan>".into(),
            at,
            message,
        })?;
        Ok(self)
    }

    /// Parses, checks and compiles spec text; `path` only labels errors.
    pub fn parse(text: &str, path: &Path) -> Result<World, SpecError> {
        let spec: WorldSpec = serde_json::from_str(text).map_err(|e| SpecError::Parse {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        let invalid = |at: String, message: String| SpecError::Invalid {
            path: path.to_path_buf(),
            at,
            message,
        };
        check(&spec).map_err(|(at, message)| invalid(at, message))?;
        let mut tools = Vec::new();
        for (index, tool) in spec.tools.iter().enumerate() {
            let compile = |schema: &Value, key: &str| {
                jsonschema::validator_for(schema).map_err(|e| {
                    invalid(
                        format!("/tools/{index}/{key}"),
                        format!("not a usable JSON Schema: {e}"),
                    )
                })
            };
            let input = compile(&tool.input_schema, "inputSchema")?;
            let output = match &tool.output_schema {
                Some(schema) => Some(compile(schema, "outputSchema")?),
                None => None,
            };
            tools.push(Tool {
                spec: tool.clone(),
                input,
                output,
            });
        }
        Ok(World { spec, tools })
    }

    /// Returns the tool called `name`.
    pub fn tool(&self, name: &str) -> Option<&Tool> {
        self.tools.iter().find(|t| t.spec.name == name)
    }

    /// Returns the latency model of a call to `tool` (or of any other request, for `None` or
    /// an unknown tool): the tool's own, else the world's, else [`LatencySpec::DEFAULT`].
    pub fn latency(&self, tool: Option<&str>) -> LatencySpec {
        let own = tool.and_then(|name| self.tool(name)?.spec.latency);
        own.or(self.spec.latency).unwrap_or(LatencySpec::DEFAULT)
    }
}

type Problem = (String, String);

fn check(spec: &WorldSpec) -> Result<(), Problem> {
    if let Some(format) = spec.format.as_deref().filter(|f| *f != SPEC_FORMAT) {
        return Err((
            "/format".into(),
            format!("unknown format `{format}`, expected `{SPEC_FORMAT}`"),
        ));
    }
    if !spec.initial_state.is_object() {
        return Err((
            "/initial_state".into(),
            "the state must be a JSON object".into(),
        ));
    }
    for (index, tool) in spec.tools.iter().enumerate() {
        check_tool(spec, index, tool)?;
    }
    for (index, rule) in spec.faults.iter().enumerate() {
        let at = format!("/faults/{index}");
        if rule.tool != "*" && !spec.tools.iter().any(|t| t.name == rule.tool) {
            return Err((
                format!("{at}/tool"),
                format!("no tool is named `{}`", rule.tool),
            ));
        }
        // A spec's text was checked when it loaded; a rule given in Rust is checked here.
        if rule.trigger == Trigger::OnCall(0) {
            return Err((format!("{at}/on_call"), "calls count from 1".into()));
        }
    }
    for (index, assertion) in spec.goal.assertions.iter().enumerate() {
        let at = format!("/goal/assertions/{index}");
        tokens(&assertion.path).map_err(|m| (format!("{at}/path"), m.to_string()))?;
        let checks = usize::from(assertion.equals.is_some())
            + usize::from(assertion.exists == Some(true))
            + usize::from(assertion.absent == Some(true));
        if checks != 1 {
            return Err((
                at,
                "give exactly one of `equals`, `exists: true`, `absent: true`".into(),
            ));
        }
    }
    for (index, pattern) in spec.goal.allow.iter().enumerate() {
        tokens(pattern).map_err(|m| (format!("/goal/allow/{index}"), m.to_string()))?;
    }
    Ok(())
}

fn check_tool(spec: &WorldSpec, index: usize, tool: &ToolSpec) -> Result<(), Problem> {
    let at = format!("/tools/{index}");
    let valid_name = !tool.name.is_empty()
        && tool.name.len() <= 128
        && tool
            .name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c));
    if !valid_name {
        return Err((
            format!("{at}/name"),
            format!("`{}` is not 1-128 of [A-Za-z0-9_.-]", tool.name),
        ));
    }
    if spec.tools[..index].iter().any(|t| t.name == tool.name) {
        return Err((
            format!("{at}/name"),
            format!("a second tool is named `{}`", tool.name),
        ));
    }
    if tool.input_schema.get("type") != Some(&Value::String("object".into())) {
        return Err((
            format!("{at}/inputSchema"),
            "must be an object schema (`\"type\": \"object\"`)".into(),
        ));
    }
    let properties = tool
        .input_schema
        .get("properties")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut bound: Vec<String> = Vec::new();
    for (op_index, operation) in tool.effects.iter().enumerate() {
        let op_at = format!("{at}/effects/{op_index}");
        let path = operation.path();
        // Check the pointer shape with placeholders filled by a harmless token.
        let filled = fill(path);
        let depth = tokens(&filled)
            .map_err(|m| (format!("{op_at}/path"), m.to_string()))?
            .len();
        if depth > PATH_DEPTH_MAX {
            return Err((
                format!("{op_at}/path"),
                format!("the path is {depth} levels deep; an effect's path may have at most {PATH_DEPTH_MAX}"),
            ));
        }
        if filled.is_empty() {
            return Err((
                format!("{op_at}/path"),
                "an effect cannot target the whole state".into(),
            ));
        }
        let mut names: Vec<&str> = placeholders(path);
        if let Some(value) = operation.value() {
            strings(value, &mut |s| names.extend(placeholders(s)));
        }
        for name in names {
            let known = properties.contains_key(name)
                || bound.iter().any(|b| b == name)
                || name == "$call"
                || name == "$tool_call";
            if !known {
                return Err((op_at, format!("`{{{{{name}}}}}` is neither an inputSchema property nor bound by an earlier read")));
            }
        }
        if let Operation::Read { name, .. } = operation {
            bound.push(name.clone());
        }
    }
    Ok(())
}

fn fill(path: &str) -> String {
    let mut out = path.to_string();
    for name in placeholders(path) {
        out = out.replace(&format!("{{{{{name}}}}}"), "x");
    }
    out
}

fn strings<'a>(value: &'a Value, visit: &mut impl FnMut(&'a str)) {
    match value {
        Value::String(s) => visit(s),
        Value::Array(items) => items.iter().for_each(|v| strings(v, visit)),
        Value::Object(object) => object.values().for_each(|v| strings(v, visit)),
        _ => {}
    }
}

/// Returns the `tools/list` entry of a tool, as MCP serves it.
pub fn tool_listing(tool: &ToolSpec) -> Value {
    let mut entry = Map::new();
    entry.insert("name".into(), Value::String(tool.name.clone()));
    if let Some(title) = &tool.title {
        entry.insert("title".into(), Value::String(title.clone()));
    }
    if let Some(description) = &tool.description {
        entry.insert("description".into(), Value::String(description.clone()));
    }
    entry.insert("inputSchema".into(), tool.input_schema.clone());
    if let Some(schema) = &tool.output_schema {
        entry.insert("outputSchema".into(), schema.clone());
    }
    if let Some(annotations) = &tool.annotations {
        entry.insert("annotations".into(), annotations.clone());
    }
    Value::Object(entry)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(text: &str) -> String {
        World::parse(text, Path::new("w.json"))
            .unwrap_err()
            .to_string()
    }

    const BASE: &str = r#"{"name":"w","initial_state":{},"goal":{"assertions":[]},"tools":[
        {"name":"t","inputSchema":{"type":"object","properties":{"id":{"type":"string"}}},
         "effects":[{"op":"set","path":"/x/{{id}}","value":1}]}]"#;

    #[test]
    fn an_effect_path_deeper_than_the_cap_is_refused_at_its_field() {
        // Goal: a path of thousands of empty tokens (fuzzing found one) built a state so deep
        // that copying or dropping it overflowed the stack; now the spec is refused where the
        // path is, and a path at the cap still loads.
        let at_cap = format!("/x{}", "/y".repeat(PATH_DEPTH_MAX - 1));
        let spec = |path: &str| format!("{}}}", BASE.replace("/x/{{id}}", path));
        assert!(World::parse(&spec(&at_cap), Path::new("w.json")).is_ok());
        let deep = error(&spec(&"/".repeat(15_000)));
        assert!(
            deep.contains("at /tools/0/effects/0/path") && deep.contains("15000 levels deep"),
            "{deep}"
        );
    }

    #[test]
    fn malformed_specs_say_what_and_where() {
        // Goal: shape errors carry line/column; semantic errors carry a pointer into the spec.
        assert!(World::parse(&format!("{BASE}}}"), Path::new("w.json")).is_ok());
        let typo = error(&format!("{BASE},\n\"fault\":[]}}"));
        assert!(
            typo.contains("unknown field `fault`") && typo.contains("line 4"),
            "{typo}"
        );
        let bad_op = error(&BASE.replace("\"set\"", "\"sett\"").replace("]}]", "]}]}"));
        assert!(bad_op.contains("unknown variant `sett`"), "{bad_op}");
        let bad_arg = error(&format!("{}}}", BASE.replace("{{id}}", "{{idd}}")));
        assert!(
            bad_arg.contains("at /tools/0/effects/0") && bad_arg.contains("idd"),
            "{bad_arg}"
        );
        let bad_ratio = error(&format!(
            "{BASE},\"faults\":[{{\"rate\":\"0.2\",\"fault\":{{\"kind\":\"timeout\"}}}}]}}"
        ));
        assert!(
            bad_ratio.contains("`rate`: `0.2` is not a ratio `n/d`")
                && bad_ratio.contains("line 3"),
            "{bad_ratio}"
        );
        let bad_schema = error(&format!("{}}}", BASE.replace("\"string\"", "\"strang\"")));
        assert!(
            bad_schema.contains("at /tools/0/inputSchema"),
            "{bad_schema}"
        );
    }
}

#[cfg(test)]
mod example_tests {
    use super::*;

    fn repo(relative: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../..")
            .join(relative)
    }

    #[test]
    fn shipped_worlds_load_and_match_the_published_schema() {
        // Goal: every example under scenarios/worlds/ compiles and validates against
        // docs/world-spec.schema.json, so the schema and the loader agree.
        let text = std::fs::read_to_string(repo("docs/world-spec.schema.json")).unwrap();
        let schema: Value = serde_json::from_str(&text).unwrap();
        let validator = jsonschema::validator_for(&schema).unwrap();
        for name in ["ticket-tracker.json", "bank-ledger.json"] {
            let path = repo(&format!("scenarios/worlds/{name}"));
            World::load(&path).unwrap_or_else(|e| panic!("{e}"));
            let spec: Value =
                serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            let errors: Vec<String> = validator
                .iter_errors(&spec)
                .map(|e| e.to_string())
                .collect();
            assert!(errors.is_empty(), "{name}: {errors:?}");
        }
        let bad = serde_json::json!({"name": "w", "initial_state": {}, "tools": [], "goal": {"assertions": [{"path": "/x"}]}});
        assert!(
            !validator.is_valid(&bad),
            "an assertion without a check is rejected"
        );
    }

    #[test]
    fn the_docs_example_world_loads_and_scores_meddling_as_damage() {
        // Goal: the full example in docs/mcp-world.md is a valid spec, and its goal FAILs a
        // state where T-1 is done and T-2 was also closed (its `exists` check exempts nothing).
        let text = std::fs::read_to_string(repo("docs/mcp-world.md")).unwrap();
        let example = text
            .split("A full example")
            .nth(1)
            .and_then(|rest| rest.split("```json\n").nth(1))
            .and_then(|block| block.split("\n```").next())
            .expect("docs/mcp-world.md keeps its full example");
        let world = World::parse(example, Path::new("docs/mcp-world.md")).unwrap();
        let initial = &world.spec.initial_state;
        let mut done = initial.clone();
        done["tickets"]["T-1"]["status"] = "closed".into();
        done["tickets"]["T-1"]["resolution"] = "fixed".into();
        let goal = &world.spec.goal;
        assert!(crate::world::score::score(goal, initial, &done).passed);
        let mut meddled = done.clone();
        meddled["tickets"]["T-2"]["status"] = "closed".into();
        let scored = crate::world::score::score(goal, initial, &meddled);
        assert_eq!(scored.failed_paths(), ["/tickets/T-2/status"]);
    }
}
