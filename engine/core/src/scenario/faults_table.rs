//! Decoding of `[faults]`: the fault plan, one array of rules per capability
//! (`[[faults.llm]]`, `[[faults.mcp]]`, `[[faults.fs]]`, `[[faults.process]]`).
//!
//! Every rule has one trigger, `on_call = n` (the n-th call it counts, from 1) or
//! `rate = "1/10"` (a seeded chance per call), and names what fails and how.

use super::decode::Decoded;
use super::eval::{FaultsSpec, McpFault, McpFaultKind};
use super::fields::{one_of, Field, Fields};
use super::mcp_table::{Lookup, Servers};
use super::schema::Capability;
use super::tables::ratio;
use crate::cap::fault_rules::{FsFault, FsFaultKind, LlmFault, ProcessFault, Trigger};

/// The keys of `[faults]`.
const FAULTS_KEYS: [&str; 4] = ["llm", "mcp", "fs", "process"];
/// The keys of a `[[faults.llm]]` rule.
const LLM_KEYS: [&str; 5] = ["on_call", "rate", "status", "retry_after", "message"];
/// The keys of a `[[faults.fs]]` rule.
const FS_KEYS: [&str; 4] = ["op", "on_call", "rate", "kind"];
/// The keys of a `[[faults.process]]` rule.
const PROCESS_KEYS: [&str; 4] = ["program", "on_call", "rate", "exit_code"];
/// The keys every `[[faults.mcp]]` rule takes, whatever its kind.
const MCP_KEYS: [&str; 5] = ["server", "tool", "on_call", "rate", "kind"];
/// The operations a `[[faults.fs]]` rule may name (`remove` covers files and directories).
pub(crate) const FS_OPS: [&str; 9] = [
    "read", "write", "append", "remove", "rename", "mkdir", "list", "stat", "*",
];
/// The MCP fault kinds and the keys each adds.
const MCP_KINDS: [(&str, &[&str]); 4] = [
    ("rpc_error", &["code", "message", "retry_after"]),
    ("timeout", &["after"]),
    ("tool_error", &["message"]),
    ("partial_write", &["ops"]),
];
const MCP_RPC_CODE_DEFAULT: i64 = 429;
const MCP_RPC_MESSAGE_DEFAULT: &str = "rate limited";
const MCP_TIMEOUT_DEFAULT_MS: u64 = 30_000;
const LLM_STATUS_DEFAULT: i64 = 429;
const PROCESS_EXIT_CODE_DEFAULT: i64 = 1;

/// Decodes `[faults]`; `servers` are the `[[mcp]]` servers its MCP rules may name.
pub(crate) fn faults(
    decoded: &mut Decoded,
    field: &Field<'_>,
    servers: &Servers,
) -> Option<FaultsSpec> {
    let what = "a [faults] table of rule arrays like [[faults.llm]]";
    let mut fields = decoded.table(field, what)?;
    let llm = rules(decoded, &mut fields, "llm", Some(Capability::Llm), llm_rule);
    let mcp = rules(decoded, &mut fields, "mcp", None, |d, f| {
        mcp_rule(d, f, servers)
    });
    let fs = rules(decoded, &mut fields, "fs", Some(Capability::Fs), fs_rule);
    let process = rules(
        decoded,
        &mut fields,
        "process",
        Some(Capability::Process),
        process_rule,
    );
    fields.finish(
        decoded,
        &format!("unknown key, expected one of {}", one_of(&FAULTS_KEYS)),
    );
    Some(FaultsSpec {
        llm: llm?,
        mcp: mcp?,
        fs: fs?,
        process: process?,
    })
}

/// Decodes the rule array `faults.<key>`, each rule with `rule`; `needs` is the table the
/// rules' capability needs, reported once at the first rule when it is missing.
fn rules<T>(
    decoded: &mut Decoded,
    fields: &mut Fields<'_>,
    key: &str,
    needs: Option<Capability>,
    mut rule: impl FnMut(&mut Decoded, &Field<'_>) -> Option<T>,
) -> Option<Vec<T>> {
    let Some(field) = fields.take(key) else {
        return Some(Vec::new());
    };
    let items = decoded.array(&field, &format!("an array of [[faults.{key}]] tables"))?;
    if let (Some(capability), Some(first)) = (needs, items.first()) {
        if !decoded.tables.contains(&capability) {
            let message = format!("[[faults.{key}]] needs {}", capability.table());
            decoded.problem(first.span.clone(), first.path.clone(), message);
        }
    }
    let decoded_rules: Vec<Option<T>> = items.iter().map(|item| rule(decoded, item)).collect();
    decoded_rules.into_iter().collect()
}

/// A rule's trigger: exactly one of `on_call` and `rate`.
fn trigger(decoded: &mut Decoded, fields: &mut Fields<'_>) -> Option<Trigger> {
    match (fields.take("on_call"), fields.take("rate")) {
        (Some(on_call), None) => decoded
            .integer(&on_call, 1, i64::MAX, "a call number from 1")
            .map(|n| Trigger::OnCall(n as u64)),
        (None, Some(rate)) => ratio(decoded, &rate).map(Trigger::Rate),
        (Some(_), Some(rate)) => {
            let message = "expected either `on_call` or `rate`, found both".to_string();
            decoded.problem(rate.span, rate.path, message);
            None
        }
        (None, None) => {
            let what = "a trigger: `on_call = 2` or `rate = \"1/10\"`";
            decoded.missing(fields, "on_call", what);
            None
        }
    }
}

/// An optional string key (`None` when absent); `""` refused.
pub(crate) fn text(
    decoded: &mut Decoded,
    fields: &mut Fields<'_>,
    key: &str,
    what: &str,
) -> Option<Option<String>> {
    let Some(field) = fields.take(key) else {
        return Some(None);
    };
    let text = decoded.string(&field, what)?;
    if text.is_empty() {
        decoded.expected(&field, what);
        return None;
    }
    Some(Some(text.to_string()))
}

/// A required string key; `""` refused.
pub(crate) fn required_text(
    decoded: &mut Decoded,
    fields: &mut Fields<'_>,
    key: &str,
    what: &str,
) -> Option<String> {
    let text = text(decoded, fields, key, what)?;
    if text.is_none() {
        decoded.missing(fields, key, what);
    }
    text
}

/// An optional `retry_after` duration, in milliseconds.
fn retry_after(decoded: &mut Decoded, fields: &mut Fields<'_>) -> Option<Option<u64>> {
    match fields.take("retry_after") {
        Some(field) => decoded.duration_ms(&field).map(Some),
        None => Some(None),
    }
}

/// An integer key in `low..=high`, `default` when absent.
fn integer(
    decoded: &mut Decoded,
    fields: &mut Fields<'_>,
    key: &str,
    (low, high): (i64, i64),
    default: i64,
) -> Option<i64> {
    match fields.take(key) {
        Some(field) => decoded.integer(
            &field,
            low,
            high,
            &format!("an integer from {low} to {high}"),
        ),
        None => Some(default),
    }
}

fn llm_rule(decoded: &mut Decoded, field: &Field<'_>) -> Option<LlmFault> {
    let what = "a [[faults.llm]] table like { on_call = 2, status = 429 }";
    let mut fields = decoded.table(field, what)?;
    let trigger = trigger(decoded, &mut fields);
    let status = integer(
        decoded,
        &mut fields,
        "status",
        (400, 599),
        LLM_STATUS_DEFAULT,
    );
    let retry_after_ms = retry_after(decoded, &mut fields);
    let message = text(decoded, &mut fields, "message", "an error message");
    fields.finish(
        decoded,
        &format!("unknown key, expected one of {}", one_of(&LLM_KEYS)),
    );
    let status = status? as u16;
    Some(LlmFault {
        trigger: trigger?,
        status,
        retry_after_ms: retry_after_ms?,
        message: message?.unwrap_or_else(|| format!("injected fault: HTTP {status}")),
    })
}

fn mcp_rule(decoded: &mut Decoded, field: &Field<'_>, servers: &Servers) -> Option<McpFault> {
    let what =
        "a [[faults.mcp]] table like { server = \"tickets\", on_call = 1, kind = \"rpc_error\" }";
    let mut fields = decoded.table(field, what)?;
    let server = match fields.take("server") {
        Some(server) => server_ref(decoded, &server, servers),
        None => {
            decoded.missing(&fields, "server", "the name of an [[mcp]] server");
            None
        }
    };
    let tool = text(decoded, &mut fields, "tool", "a tool name or \"*\"");
    let trigger = trigger(decoded, &mut fields);
    let kinds: Vec<&str> = MCP_KINDS.iter().map(|(kind, _)| *kind).collect();
    let what = format!("a fault kind {}", one_of(&kinds));
    let kind = match fields.take("kind") {
        Some(kind) => match decoded.string(&kind, &what) {
            Some(name) => match MCP_KINDS.iter().find(|(known, _)| *known == name) {
                Some((name, extras)) => {
                    let kind = mcp_kind(decoded, &mut fields, name);
                    let keys: Vec<&str> = MCP_KEYS.iter().chain(extras.iter()).copied().collect();
                    fields.finish(
                        decoded,
                        &format!(
                            "unknown key, expected one of {} (for kind `{name}`)",
                            one_of(&keys)
                        ),
                    );
                    kind
                }
                None => {
                    decoded.expected(&kind, &what);
                    None
                }
            },
            None => None,
        },
        None => {
            decoded.missing(&fields, "kind", &what);
            None
        }
    };
    Some(McpFault {
        server: server?,
        tool: tool?.unwrap_or_else(|| "*".to_string()),
        trigger: trigger?,
        kind: kind?,
    })
}

/// The kind-specific keys of an MCP fault.
fn mcp_kind(decoded: &mut Decoded, fields: &mut Fields<'_>, kind: &str) -> Option<McpFaultKind> {
    match kind {
        "rpc_error" => {
            let code = integer(
                decoded,
                fields,
                "code",
                (i64::MIN, i64::MAX),
                MCP_RPC_CODE_DEFAULT,
            );
            let message = text(decoded, fields, "message", "an error message");
            let retry_after_ms = retry_after(decoded, fields);
            Some(McpFaultKind::RpcError {
                code: code?,
                message: message?.unwrap_or_else(|| MCP_RPC_MESSAGE_DEFAULT.to_string()),
                retry_after_ms: retry_after_ms?,
            })
        }
        "timeout" => {
            let after_ms = match fields.take("after") {
                Some(after) => decoded.duration_ms(&after),
                None => Some(MCP_TIMEOUT_DEFAULT_MS),
            };
            Some(McpFaultKind::Timeout {
                after_ms: after_ms?,
            })
        }
        "tool_error" => {
            let message = required_text(decoded, fields, "message", "the tool error's text");
            Some(McpFaultKind::ToolError { message: message? })
        }
        _ => {
            const WHAT: &str = "how many operations land, an integer from 0";
            let ops = match fields.take("ops") {
                Some(ops) => decoded.integer(&ops, 0, i64::MAX, WHAT),
                None => {
                    decoded.missing(fields, "ops", WHAT);
                    None
                }
            };
            Some(McpFaultKind::PartialWrite { ops: ops? as u64 })
        }
    }
}

/// A reference to an `[[mcp]]` server by name.
pub(crate) fn server_ref(
    decoded: &mut Decoded,
    field: &Field<'_>,
    servers: &Servers,
) -> Option<String> {
    let what = format!("the name of an [[mcp]] server {}", servers.known());
    let name = decoded.string(field, &what)?;
    if servers.lookup(name) == Lookup::Unknown {
        decoded.expected(field, &what);
        return None;
    }
    Some(name.to_string())
}

fn fs_rule(decoded: &mut Decoded, field: &Field<'_>) -> Option<FsFault> {
    let what = "a [[faults.fs]] table like { op = \"write\", on_call = 1, kind = \"enospc\" }";
    let mut fields = decoded.table(field, what)?;
    let op = match fields.take("op") {
        Some(op) => {
            let what = format!("an operation {}", one_of(&FS_OPS));
            match decoded.string(&op, &what) {
                Some(name) if FS_OPS.contains(&name) => Some(name.to_string()),
                Some(_) => {
                    decoded.expected(&op, &what);
                    None
                }
                None => None,
            }
        }
        None => Some("*".to_string()),
    };
    let trigger = trigger(decoded, &mut fields);
    const KIND: &str = "a fault kind `eio` or `enospc`";
    let kind = match fields.take("kind") {
        Some(kind) => match decoded.string(&kind, KIND) {
            Some("eio") => Some(FsFaultKind::Eio),
            Some("enospc") => Some(FsFaultKind::Enospc),
            Some(_) => {
                decoded.expected(&kind, KIND);
                None
            }
            None => None,
        },
        None => {
            decoded.missing(&fields, "kind", KIND);
            None
        }
    };
    fields.finish(
        decoded,
        &format!("unknown key, expected one of {}", one_of(&FS_KEYS)),
    );
    Some(FsFault {
        op: op?,
        trigger: trigger?,
        kind: kind?,
    })
}

fn process_rule(decoded: &mut Decoded, field: &Field<'_>) -> Option<ProcessFault> {
    let what = "a [[faults.process]] table like { program = \"cargo\", on_call = 1 }";
    let mut fields = decoded.table(field, what)?;
    let program = text(
        decoded,
        &mut fields,
        "program",
        "a program name like \"cargo\" or \"*\"",
    );
    let trigger = trigger(decoded, &mut fields);
    let exit_code = integer(
        decoded,
        &mut fields,
        "exit_code",
        (0, 255),
        PROCESS_EXIT_CODE_DEFAULT,
    );
    fields.finish(
        decoded,
        &format!("unknown key, expected one of {}", one_of(&PROCESS_KEYS)),
    );
    Some(ProcessFault {
        program: program?.unwrap_or_else(|| "*".to_string()),
        trigger: trigger?,
        exit_code: exit_code? as i32,
    })
}
