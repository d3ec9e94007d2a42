//! Decoding of `[[verify]]`: the verifiers a run's verdict rests on ("no tests, no pass").
//!
//! Each entry has a `kind` and the keys of that kind, and may have a `name` (for `outcome`,
//! `name` names the outcome). Regular expressions in `matches` are compiled here, so a bad
//! pattern is a check error at its field, not a surprise at the end of a run.

use simtape::scenario::decoder::{
    fs_path, one_of, required_text, Capability, Decoder, Field, Fields,
};
use simtape::scenario::Tables;

use super::faults::server_ref;
use super::mcp::{Lookup, Servers};
use crate::spec::{Check, FsState, Pattern, TextMatch, VerifySpec};

/// The verifier kinds and the keys each takes besides `kind` and `name`.
pub(super) const VERIFY_KINDS: [(&str, &[&str]); 6] = [
    (
        "fs",
        &["path", "state", "equals", "contains", "excludes", "matches"],
    ),
    ("answer", &["equals", "contains", "excludes", "matches"]),
    ("tool_called", &["tool", "args", "called"]),
    ("world_goal", &["server", "collateral"]),
    ("gate", &["program", "args", "exit_code"]),
    ("outcome", &["value"]),
];
/// The keys of a text expectation.
const TEXT_KEYS: [&str; 4] = ["equals", "contains", "excludes", "matches"];
/// The states of an `fs` verifier.
const FS_STATES: [(&str, FsState); 6] = [
    ("added", FsState::Added),
    ("modified", FsState::Modified),
    ("deleted", FsState::Deleted),
    ("unchanged", FsState::Unchanged),
    ("exists", FsState::Exists),
    ("absent", FsState::Absent),
];

/// Decodes `[[verify]]`; `tables` gives each entry's line, `servers` the `[[mcp]]` servers a
/// `world_goal` may name. With a `command_agent`, a `gate` runs in the agent's working
/// directory, not through `[process]`.
pub(crate) fn verify(
    decoded: &mut Decoder,
    field: &Field<'_>,
    servers: &Servers,
    tables: &Tables<'_>,
    command_agent: bool,
) -> Option<Vec<VerifySpec>> {
    let items = decoded.array(field, "an array of [[verify]] tables")?;
    let verifiers: Vec<Option<VerifySpec>> = items
        .iter()
        .map(|item| verifier(decoded, item, servers, tables, command_agent))
        .collect();
    verifiers.into_iter().collect()
}

fn verifier(
    decoded: &mut Decoder,
    field: &Field<'_>,
    servers: &Servers,
    tables: &Tables<'_>,
    command_agent: bool,
) -> Option<VerifySpec> {
    let what = "a [[verify]] table like { kind = \"answer\", contains = \"done\" }";
    let mut fields = decoded.table(field, what)?;
    let Some(kind_field) = fields.take("kind") else {
        decoded.missing(&fields, "kind", &verifier_kinds(&VERIFY_KINDS));
        return None;
    };
    let taken = check_of(
        decoded,
        &mut fields,
        &kind_field,
        &VERIFY_KINDS,
        servers,
        command_agent,
        field,
    );
    let name = match (taken.as_ref().map(|(kind, _)| *kind), fields.take("name")) {
        (Some("outcome"), _) | (None, None) => None,
        (_, Some(name)) => Some(decoded.label(&name)),
        (_, None) => None,
    };
    let (kind, extras) = VERIFY_KINDS
        .iter()
        .find(|(known, _)| Some(*known) == taken.as_ref().map(|(kind, _)| *kind))
        .copied()
        .unwrap_or(("", &[]));
    let keys: Vec<&str> = ["kind", "name"]
        .iter()
        .chain(extras.iter())
        .copied()
        .collect();
    fields.finish(
        decoded,
        &format!(
            "unknown key, expected one of {} (for kind `{kind}`)",
            one_of(&keys)
        ),
    );
    let (_, check) = taken?;
    let check = check?;
    let name = match name {
        Some(name) => name?,
        None => default_name(&check),
    };
    Some(VerifySpec {
        name,
        line: tables.line(field),
        check,
    })
}

/// What a verifier's (or a property's check's) kind must be.
fn verifier_kinds(kinds: &[(&str, &[&str])]) -> String {
    let names: Vec<&str> = kinds.iter().map(|(kind, _)| *kind).collect();
    format!("a verifier kind {}", one_of(&names))
}

/// Decodes the check named by `kind_field` (one of `kinds`) from `fields`, taking the keys
/// of that kind: `None` when the kind is unknown; else the kind and its check, `None` when a
/// key is wrong (each problem reported). The caller takes its own keys and finishes `fields`.
pub(super) fn check_of(
    decoded: &mut Decoder,
    fields: &mut Fields<'_>,
    kind_field: &Field<'_>,
    kinds: &[(&'static str, &'static [&'static str])],
    servers: &Servers,
    command_agent: bool,
    table: &Field<'_>,
) -> Option<(&'static str, Option<Check>)> {
    let what = verifier_kinds(kinds);
    let kind = decoded.string(kind_field, &what)?;
    let Some((kind, _)) = kinds.iter().find(|(known, _)| *known == kind) else {
        decoded.expected(kind_field, &what);
        return None;
    };
    let needs = match *kind {
        "fs" => Some(Capability::Fs),
        "gate" if !command_agent => Some(Capability::Process),
        _ => None,
    };
    if let Some(capability) = needs.filter(|c| !decoded.has_table(*c)) {
        let message = format!("a `{kind}` verifier needs {}", capability.table());
        decoded.problem(kind_field.span.clone(), kind_field.path.clone(), message);
    }
    let check = match *kind {
        "fs" => fs_check(decoded, fields),
        "answer" => answer_check(decoded, fields, table),
        "tool_called" => tool_called_check(decoded, fields),
        "world_goal" => world_goal_check(decoded, fields, servers),
        "gate" => gate_check(decoded, fields),
        _ => outcome_check(decoded, fields),
    };
    Some((*kind, check))
}

/// Returns a verifier's name when the file gives none: `<kind> <target>`.
fn default_name(check: &Check) -> String {
    match check {
        Check::Fs { path, .. } => format!("fs {path}"),
        Check::Answer(_) => "answer".to_string(),
        Check::ToolCalled { tool, .. } => format!("tool_called {tool}"),
        Check::WorldGoal { server, .. } => format!("world_goal {server}"),
        Check::Gate { program, args, .. } => {
            let command: Vec<&str> = std::iter::once(program.as_str())
                .chain(args.iter().map(String::as_str))
                .collect();
            format!("gate {}", command.join(" "))
        }
        Check::Outcome { name, .. } => format!("outcome {name}"),
    }
}

fn fs_check(decoded: &mut Decoder, fields: &mut Fields<'_>) -> Option<Check> {
    const PATH: &str = "a path inside the [fs] root like \"src/lib.rs\"";
    let path = match fields.take("path") {
        Some(path) => fs_path(decoded, &path),
        None => {
            decoded.missing(fields, "path", PATH);
            None
        }
    };
    let states: Vec<&str> = FS_STATES.iter().map(|(name, _)| *name).collect();
    let what = format!("a state {}", one_of(&states));
    let state = match fields.take("state") {
        Some(state) => match decoded.string(&state, &what) {
            Some(name) => match FS_STATES.iter().find(|(known, _)| *known == name) {
                Some((_, state)) => Some(*state),
                None => {
                    decoded.expected(&state, &what);
                    None
                }
            },
            None => None,
        },
        None => Some(FsState::Exists),
    };
    let (content, first) = text_match(decoded, fields);
    if let (Some(state @ (FsState::Deleted | FsState::Absent)), Some(first)) = (state, first) {
        let name = FS_STATES
            .iter()
            .find(|(_, known)| *known == state)
            .map(|(name, _)| *name)
            .expect("every state has a name");
        let key = first
            .path
            .rsplit('.')
            .next()
            .unwrap_or_default()
            .to_string();
        let message = format!(
            "expected no content expectation with state \"{name}\" (the path has no content at the end), found `{key}`"
        );
        decoded.problem(first.span, first.path, message);
        return None;
    }
    Some(Check::Fs {
        path: path?,
        state: state?,
        content: content?,
    })
}

fn answer_check(
    decoded: &mut Decoder,
    fields: &mut Fields<'_>,
    table: &Field<'_>,
) -> Option<Check> {
    let (content, first) = text_match(decoded, fields);
    if first.is_none() {
        let message = format!(
            "expected at least one of {}, found none",
            one_of(&TEXT_KEYS)
        );
        decoded.problem(table.span.clone(), table.path.clone(), message);
        return None;
    }
    content.map(Check::Answer)
}

/// The text expectations among `fields`, and the first one given (for errors about them).
fn text_match<'a>(
    decoded: &mut Decoder,
    fields: &mut Fields<'a>,
) -> (Option<TextMatch>, Option<Field<'a>>) {
    let mut first = None;
    let mut complete = true;
    let mut texts: Vec<Option<String>> = Vec::new();
    let mut matches = None;
    for key in TEXT_KEYS {
        let Some(field) = fields.take(key) else {
            if key != "matches" {
                texts.push(None);
            }
            continue;
        };
        let text = decoded.string(&field, "a string");
        if key == "matches" {
            matches = text.and_then(|text| pattern(decoded, &field, text));
            complete &= matches.is_some();
        } else {
            complete &= text.is_some();
            texts.push(text.map(str::to_string));
        }
        first = first.or(Some(field));
    }
    let [equals, contains, excludes] =
        <[Option<String>; 3]>::try_from(texts).expect("one entry per text key");
    let content = TextMatch {
        equals,
        contains,
        excludes,
        matches,
    };
    (complete.then_some(content), first)
}

/// A regular expression (Rust `regex` syntax), compiled once, here.
fn pattern(decoded: &mut Decoder, field: &Field<'_>, text: &str) -> Option<Pattern> {
    match Pattern::new(text) {
        Ok(pattern) => Some(pattern),
        Err(error) => {
            let message = format!(
                "expected a regular expression, found {}: {}",
                field.found(),
                one_line(&error.to_string())
            );
            decoded.problem(field.span.clone(), field.path.clone(), message);
            None
        }
    }
}

/// Puts regex's multi-line message on one line: its lines trimmed and joined by `; ` (a
/// space after a line ending in `:`), the caret line (which only points into the pattern
/// shown above it) dropped.
fn one_line(message: &str) -> String {
    let lines = message
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.chars().all(|c| c == '^' || c == '~'));
    let mut joined = String::new();
    for line in lines {
        if !joined.is_empty() {
            joined.push_str(if joined.ends_with(':') { " " } else { "; " });
        }
        joined.push_str(line);
    }
    joined
}

fn tool_called_check(decoded: &mut Decoder, fields: &mut Fields<'_>) -> Option<Check> {
    let tool = required_text(decoded, fields, "tool", "a tool name like \"write_file\"");
    let args = match fields.take("args") {
        Some(args) => match args.is_table() {
            true => decoded.json(&args).map(Some),
            _ => {
                decoded.expected(&args, "a table of arguments like { path = \"src/lib.rs\" }");
                None
            }
        },
        None => Some(None),
    };
    let called = boolean(decoded, fields, "called", true);
    Some(Check::ToolCalled {
        tool: tool?,
        args: args?,
        called: called?,
    })
}

fn world_goal_check(
    decoded: &mut Decoder,
    fields: &mut Fields<'_>,
    servers: &Servers,
) -> Option<Check> {
    let server = match fields.take("server") {
        Some(server) => server_ref(decoded, &server, servers).and_then(|name| {
            if servers.lookup(&name) == Lookup::Found(Some(false)) {
                let message = format!(
                    "expected an [[mcp]] server backed by a world (`world = …`), found {name:?}, which replays a cassette"
                );
                decoded.problem(server.span.clone(), server.path.clone(), message);
                return None;
            }
            Some(name)
        }),
        None => {
            decoded.missing(fields, "server", "the name of an [[mcp]] world server");
            None
        }
    };
    let collateral = boolean(decoded, fields, "collateral", false);
    Some(Check::WorldGoal {
        server: server?,
        allow_collateral: collateral?,
    })
}

fn gate_check(decoded: &mut Decoder, fields: &mut Fields<'_>) -> Option<Check> {
    let program = required_text(decoded, fields, "program", "a program name like \"cargo\"");
    let args = match fields.take("args") {
        Some(args) => string_list(decoded, &args),
        None => Some(Vec::new()),
    };
    let exit_code = match fields.take("exit_code") {
        Some(code) => decoded.integer(&code, 0, 255, "an exit code from 0 to 255"),
        None => Some(0),
    };
    Some(Check::Gate {
        program: program?,
        args: args?,
        exit_code: exit_code? as i32,
    })
}

fn string_list(decoded: &mut Decoder, field: &Field<'_>) -> Option<Vec<String>> {
    let items = decoded.array(field, "an array of arguments like [\"test\"]")?;
    let args: Vec<Option<String>> = items
        .iter()
        .map(|item| {
            decoded
                .string(item, "an argument string")
                .map(str::to_string)
        })
        .collect();
    args.into_iter().collect()
}

fn outcome_check(decoded: &mut Decoder, fields: &mut Fields<'_>) -> Option<Check> {
    let name = match fields.take("name") {
        Some(name) => decoded.label(&name),
        None => {
            decoded.missing(fields, "name", "the outcome's name");
            None
        }
    };
    let value = match fields.take("value") {
        Some(value) => decoded.json(&value),
        None => {
            decoded.missing(fields, "value", "the expected value (any TOML value)");
            None
        }
    };
    Some(Check::Outcome {
        name: name?,
        value: value?,
    })
}

/// A boolean key, `default` when absent.
fn boolean(
    decoded: &mut Decoder,
    fields: &mut Fields<'_>,
    key: &str,
    default: bool,
) -> Option<bool> {
    match fields.take(key) {
        Some(field) => match field.boolean() {
            Some(value) => Some(value),
            None => {
                decoded.expected(&field, "true or false");
                None
            }
        },
        None => Some(default),
    }
}
