//! Decoding: walks the TOML tree into a [`Spec`], collecting every problem on the way. This
//! module reads the tables; `fields` decodes single values and `steps` the steps.
//!
//! Each decoding function reports what is wrong with its own field and returns `None`; its
//! caller goes on with the other fields, so one run of the decoder finds every problem it
//! can. A table's leftover keys are reported as unknown after its known keys are read.

use super::error::Problem;
use super::extension::{listed, Extension, Tables};
use super::fields::{one_of, Field};
use super::node::{Node, Span, Value};
use super::schema::{
    Capability, ChannelEnd, Spec, TaskSpec, REPEAT_MAX, SCENARIO_KEYS, TABLES, TASK_KEYS,
    TASK_NAMES_RESERVED,
};
use super::steps::step_list;
use super::{faults_table, tables};
use crate::cap::fault_rules::FaultsSpec;
use crate::limits::Limits;
use crate::time::{parse_duration_ns, START_DEFAULT_UNIX_NS};

/// A name, or a channel, as a step or task uses it: kept for the whole-scenario checks.
#[derive(Debug, Clone)]
pub(crate) struct Use {
    pub(crate) name: String,
    pub(crate) span: Span,
    pub(crate) field: String,
}

/// The decoder's state: every problem found so far, the spec once the core's tables decoded,
/// and what the checks of `validate` need even when something was wrong. An
/// [`Extension`] decodes its tables through it, with the value decoders of `fields`.
#[derive(Debug, Default)]
pub struct Decoder {
    pub(crate) spec: Option<Spec>,
    pub(crate) problems: Vec<Problem>,
    pub(crate) task_names: Vec<Use>,
    pub(crate) channels: Vec<(ChannelEnd, Use)>,
    /// The capability tables the file has (even when their contents are bad).
    pub(crate) tables: Vec<Capability>,
    /// The capabilities the caller supplies without a table ([`Extension::supplied`]).
    pub(crate) supplied: Vec<Capability>,
    /// The steps that use a capability, named by their kind.
    pub(crate) capability_uses: Vec<(Capability, Use)>,
    /// The files an extension opened, as the scenario names them (its inputs).
    pub(crate) inputs: Vec<String>,
    /// The run's virtual time cap (`[limits] virtual_time_max_ns`), once decoded: a task
    /// whose own sleeps pass it is reported at the step.
    pub(crate) virtual_time_max_ns: Option<u64>,
}

impl Decoder {
    /// Notes that runs read the file or directory at `written` (as the scenario names it,
    /// relative to its file), so a tape carries it ([`super::Scenario::input_paths`]).
    /// [`Decoder::existing_file`] notes the files it finds itself.
    pub fn note_input(&mut self, written: &str) {
        self.inputs.push(written.to_string());
    }

    /// Returns whether the file has the capability's table (even when its contents are bad),
    /// or the caller supplies the capability without one.
    pub fn has_table(&self, capability: Capability) -> bool {
        self.tables.contains(&capability) || self.supplied.contains(&capability)
    }
}

/// Decodes a document tree; `source` is its text, `extension` decodes the tables the core
/// does not own.
pub(crate) fn decode(root: &Node, source: &str, extension: &mut dyn Extension) -> Decoder {
    let mut decoded = Decoder {
        supplied: extension.supplied().to_vec(),
        ..Decoder::default()
    };
    decoded.spec = document(&mut decoded, root, source, extension);
    decoded
}

/// Decodes the whole document: `[scenario]`, `[limits]`, the capability tables, `[faults]`,
/// the extension's tables, `[[task]]`.
// Long because: the top-level tables in document order, one short decode each; the order
// is the format's, and reading it in one place shows what a scenario holds.
fn document(
    decoded: &mut Decoder,
    root: &Node,
    source: &str,
    extension: &mut dyn Extension,
) -> Option<Spec> {
    let root_field = Field {
        node: root,
        path: String::new(),
        span: 0..0,
    };
    let mut top = decoded.table(&root_field, "a TOML table")?;
    let scenario = match top.take("scenario") {
        Some(field) => scenario(decoded, &field),
        None => {
            decoded.missing(&top, "scenario", "a [scenario] table");
            None
        }
    };
    let limits = match top.take("limits") {
        Some(field) => limits(decoded, &field),
        None => Some(Limits::default()),
    };
    decoded.virtual_time_max_ns = limits.as_ref().map(|l| l.virtual_time_max_ns);
    let fs = match top.take("fs") {
        Some(field) => {
            decoded.tables.push(Capability::Fs);
            tables::fs(decoded, &field).map(Some)
        }
        None => Some(None),
    };
    let network = match top.take("network") {
        Some(field) => {
            decoded.tables.push(Capability::Network);
            tables::network(decoded, &field).map(Some)
        }
        None => Some(None),
    };
    let llm = match top.take("llm") {
        Some(field) => {
            decoded.tables.push(Capability::Llm);
            tables::llm(decoded, &field).map(Some)
        }
        None => Some(None),
    };
    let process = match top.take("process") {
        Some(field) => {
            decoded.tables.push(Capability::Process);
            tables::process(decoded, &field).map(Some)
        }
        None => Some(None),
    };
    let (faults, extension_faults) = match top.take("faults") {
        Some(field) => faults_table::faults(decoded, &field, extension.fault_tables()),
        None => (Some(FaultsSpec::default()), Vec::new()),
    };
    let extension_tables: Vec<_> = extension
        .tables()
        .iter()
        .filter_map(|(name, _)| top.take(name).map(|field| (*name, field)))
        .collect();
    let extension_tables = Tables {
        source,
        top: extension_tables,
        faults: extension_faults,
    };
    extension.decode(decoded, &extension_tables);
    let tasks = match top.take("task") {
        Some(field) => tasks(decoded, &field),
        // An agent scenario runs its agent; tasks are what a scripted one runs.
        None if extension.runs_without_tasks(&extension_tables) => Some(Vec::new()),
        None => {
            decoded.missing(&top, "task", "at least one [[task]] table");
            None
        }
    };
    top.finish(
        decoded,
        &format!(
            "unknown key, expected one of the tables {}",
            one_of(&listed(&TABLES, extension.tables()))
        ),
    );
    let (name, description, start_unix_ns, seeds) = scenario?;
    let spec = Spec {
        name,
        description,
        start_unix_ns,
        seeds,
        limits: limits?,
        fs: fs?,
        network: network?,
        llm: llm?,
        process: process?,
        tasks: tasks?,
        faults: faults?,
    };
    if let Some(problem) = super::llm_record::policy_problem(&spec) {
        decoded.problems.push(problem);
    }
    Some(spec)
}

type ScenarioTable = (String, String, i64, Vec<u64>);

fn scenario(decoded: &mut Decoder, field: &Field<'_>) -> Option<ScenarioTable> {
    let mut fields = decoded.table(field, "a [scenario] table")?;
    let name = match fields.take("name") {
        Some(name) => decoded.name(&name),
        None => {
            decoded.missing(&fields, "name", "a name of a-z, 0-9 and -");
            None
        }
    };
    let description = match fields.take("description") {
        Some(text) => decoded.string(&text, "a string").map(str::to_string),
        None => Some(String::new()),
    };
    let start = match fields.take("start") {
        Some(start) => decoded.instant(&start),
        None => Some(START_DEFAULT_UNIX_NS),
    };
    let seeds = match fields.take("seeds") {
        Some(seeds) => seed_list(decoded, &seeds),
        None => Some(vec![0]),
    };
    fields.finish(
        decoded,
        &format!("unknown key, expected one of {}", one_of(&SCENARIO_KEYS)),
    );
    Some((name?, description?, start?, seeds?))
}

fn seed_list(decoded: &mut Decoder, field: &Field<'_>) -> Option<Vec<u64>> {
    let items = decoded.array(field, "an array of seeds like [1, 2, 3]")?;
    if items.is_empty() {
        decoded.expected(field, "at least one seed");
        return None;
    }
    let mut seeds = Vec::new();
    let mut complete = true;
    for item in &items {
        match decoded.integer(item, 0, i64::MAX, "a non-negative integer") {
            Some(seed) if seeds.contains(&(seed as u64)) => {
                decoded.expected(item, "each seed once");
                complete = false;
            }
            Some(seed) => seeds.push(seed as u64),
            None => complete = false,
        }
    }
    complete.then_some(seeds)
}

/// Decodes `[limits]`. The known keys and their kinds come from [`Limits`] itself (its
/// serialized default), so a new limit is accepted here the day it is added there.
fn limits(decoded: &mut Decoder, field: &Field<'_>) -> Option<Limits> {
    let fields = decoded.table(field, "a [limits] table")?;
    let known = toml::Table::try_from(Limits::default()).unwrap_or_default();
    let known_keys: Vec<&str> = known.keys().map(String::as_str).collect();
    let mut table = toml::Table::new();
    let mut complete = true;
    for (entry, path, key_span) in fields.unread() {
        let span = entry.node.span.clone().unwrap_or(key_span.clone());
        let value_field = Field {
            node: &entry.node,
            path: path.clone(),
            span,
        };
        let value = match known.get(&entry.key) {
            None => {
                let message = format!("unknown limit, expected one of {}", one_of(&known_keys));
                decoded.problem(key_span, path, message);
                None
            }
            Some(toml::Value::Integer(_)) => limit_integer(decoded, &entry.key, &value_field),
            Some(_) => limit_other(decoded, &entry.key, &value_field),
        };
        match value {
            Some(value) => drop(table.insert(entry.key.clone(), value)),
            None => complete = false,
        }
    }
    if !complete {
        return None;
    }
    match toml::Value::Table(table).try_into::<Limits>() {
        Ok(limits) => Some(limits),
        Err(error) => {
            decoded.problem(
                field.span.clone(),
                field.path.clone(),
                error.message().to_string(),
            );
            None
        }
    }
}

/// An integer limit; one whose name ends in `_ns` also takes a duration like `"10s"`.
fn limit_integer(decoded: &mut Decoder, key: &str, field: &Field<'_>) -> Option<toml::Value> {
    let takes_duration = key.ends_with("_ns");
    let what = if takes_duration {
        "a non-negative integer of nanoseconds or a duration like \"10s\""
    } else {
        "a non-negative integer"
    };
    let ns = match &field.node.value {
        Value::String(text) if takes_duration => parse_duration_ns(text).ok(),
        Value::Integer(n) => u64::try_from(*n).ok(),
        _ => None,
    };
    match ns.and_then(|ns| i64::try_from(ns).ok()) {
        Some(n) => Some(toml::Value::Integer(n)),
        None => {
            decoded.expected(field, what);
            None
        }
    }
}

/// A limit of another kind than integer: serde decides, one key at a time so that its error
/// points at the key's value.
fn limit_other(decoded: &mut Decoder, key: &str, field: &Field<'_>) -> Option<toml::Value> {
    let value = plain_toml(field.node);
    let single = value
        .clone()
        .map(|value| toml::Table::from_iter([(key.to_string(), value)]));
    let message = match single.map(|table| toml::Value::Table(table).try_into::<Limits>()) {
        Some(Ok(_)) => return value,
        Some(Err(error)) => error.message().to_string(),
        None => format!("expected a TOML value, found {}", field.node.value.found()),
    };
    decoded.problem(field.span.clone(), field.path.clone(), message);
    None
}

/// Turns a node back into a plain `toml::Value`, for values handed to serde as they are.
fn plain_toml(node: &Node) -> Option<toml::Value> {
    Some(match &node.value {
        Value::String(text) => toml::Value::String(text.clone()),
        Value::Integer(n) => toml::Value::Integer(*n),
        Value::Float(x) => toml::Value::Float(*x),
        Value::Boolean(b) => toml::Value::Boolean(*b),
        Value::Datetime(text) => toml::Value::Datetime(text.parse().ok()?),
        Value::Array(items) => {
            toml::Value::Array(items.iter().map(plain_toml).collect::<Option<_>>()?)
        }
        Value::Table(entries) => toml::Value::Table(
            entries
                .iter()
                .map(|e| Some((e.key.clone(), plain_toml(&e.node)?)))
                .collect::<Option<_>>()?,
        ),
    })
}

fn tasks(decoded: &mut Decoder, field: &Field<'_>) -> Option<Vec<TaskSpec>> {
    let items = decoded.array(field, "an array of [[task]] tables")?;
    if items.is_empty() {
        decoded.expected(field, "at least one [[task]] table");
        return None;
    }
    let tasks: Vec<Option<TaskSpec>> = items.iter().map(|item| task(decoded, item)).collect();
    tasks.into_iter().collect()
}

fn task(decoded: &mut Decoder, field: &Field<'_>) -> Option<TaskSpec> {
    let mut fields = decoded.table(field, "a [[task]] table")?;
    let name = match fields.take("name") {
        Some(name) => task_name(decoded, &name),
        None => {
            decoded.missing(&fields, "name", "a task name of a-z, 0-9 and -");
            None
        }
    };
    let repeat = match fields.take("repeat") {
        Some(repeat) => {
            let what = format!("an integer from 1 to {REPEAT_MAX}");
            decoded
                .integer(&repeat, 1, REPEAT_MAX, &what)
                .map(|n| n as u32)
        }
        None => Some(1),
    };
    let start_after_ns = match fields.take("start_after") {
        Some(start_after) => decoded.duration(&start_after),
        None => Some(0),
    };
    let steps = match fields.take("steps") {
        Some(steps) => step_list(decoded, &steps).map(|list| {
            if let (Some(start_ns), Some(repeat)) = (start_after_ns, repeat) {
                super::steps::check_time(decoded, &steps, &list, start_ns, repeat);
            }
            let steps = list;
            let step_fields = (0..steps.len())
                .map(|index| format!("{}[{index}]", steps_path(&field.path)))
                .collect();
            (steps, step_fields)
        }),
        None => {
            decoded.missing(
                &fields,
                "steps",
                "an array of steps like [{ sleep = \"100ms\" }]",
            );
            None
        }
    };
    fields.finish(
        decoded,
        &format!("unknown key, expected one of {}", one_of(&TASK_KEYS)),
    );
    let (steps, step_fields) = steps?;
    Some(TaskSpec {
        name: name?,
        step_fields,
        repeat: repeat?,
        start_after_ns: start_after_ns?,
        steps,
    })
}

/// Returns the field path of a task's `steps`.
fn steps_path(task: &str) -> String {
    super::fields::join(task, "steps")
}

fn task_name(decoded: &mut Decoder, field: &Field<'_>) -> Option<String> {
    let name = decoded.name(field)?;
    if TASK_NAMES_RESERVED.contains(&name.as_str()) {
        let message = format!("the task name {name:?} is reserved: the engine's own tasks use it");
        decoded.problem(field.span.clone(), field.path.clone(), message);
        return None;
    }
    decoded.task_names.push(Use {
        name: name.clone(),
        span: field.span.clone(),
        field: field.path.clone(),
    });
    Some(name)
}
