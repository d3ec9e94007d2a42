//! Decoding of `[[faults.mcp]]`: tool calls to an MCP world server that fail, by call number
//! or seeded rate, with the trigger and value decoders the core's own rules use. Each kind
//! decodes straight into the world's `FaultKind` (which owns what a kind does), so this file
//! is the only other place a new kind is added.

use simtape::scenario::decoder::{
    integer, one_of, required_text, retry_after, rule_array, text, trigger, Decoder, Field, Fields,
};

use simtape_mcp::world::faults::{FaultKind, TIMEOUT_DEFAULT_MS};

use super::mcp::{Lookup, Servers};
use crate::spec::McpFault;

/// The keys every `[[faults.mcp]]` rule takes, whatever its kind.
const MCP_KEYS: [&str; 5] = ["server", "tool", "on_call", "rate", "kind"];
/// The MCP fault kinds and the keys each adds.
const MCP_KINDS: [(&str, &[&str]); 4] = [
    ("rpc_error", &["code", "message", "retry_after"]),
    ("timeout", &["after"]),
    ("tool_error", &["message"]),
    ("partial_write", &["ops"]),
];
const MCP_RPC_CODE_DEFAULT: i64 = 429;
const MCP_RPC_MESSAGE_DEFAULT: &str = "rate limited";

/// Decodes the rule array `faults.mcp`; `servers` are the `[[mcp]]` servers a rule may name.
pub(crate) fn mcp_rules(
    decoded: &mut Decoder,
    field: &Field<'_>,
    servers: &Servers,
) -> Option<Vec<McpFault>> {
    rule_array(decoded, field, "mcp", None, |d, f| mcp_rule(d, f, servers))
}

fn mcp_rule(decoded: &mut Decoder, field: &Field<'_>, servers: &Servers) -> Option<McpFault> {
    let what =
        "a [[faults.mcp]] table like { server = \"tickets\", on_call = 1, kind = \"rpc_error\" }";
    let mut fields = decoded.table(field, what)?;
    let server = match fields.take("server") {
        Some(server) => fault_server(decoded, &server, servers),
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
fn mcp_kind(decoded: &mut Decoder, fields: &mut Fields<'_>, kind: &str) -> Option<FaultKind> {
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
            Some(FaultKind::RpcError {
                code: code?,
                message: message?.unwrap_or_else(|| MCP_RPC_MESSAGE_DEFAULT.to_string()),
                // The world's error data carries the hint as MCP clients read it.
                data: retry_after_ms?.map(|ms| serde_json::json!({ "retryAfterMs": ms })),
            })
        }
        "timeout" => {
            let after_ms = match fields.take("after") {
                Some(after) => decoded.duration_ms(&after),
                None => Some(TIMEOUT_DEFAULT_MS),
            };
            Some(FaultKind::Timeout {
                after_ms: after_ms?,
            })
        }
        "tool_error" => {
            let message = required_text(decoded, fields, "message", "the tool error's text");
            Some(FaultKind::ToolError { message: message? })
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
            Some(FaultKind::PartialWrite {
                ops: usize::try_from(ops?).unwrap_or(usize::MAX),
                message: None,
            })
        }
    }
}

/// The server of an MCP fault: an `[[mcp]]` server backed by a world (only a world has
/// state to fail).
fn fault_server(decoded: &mut Decoder, field: &Field<'_>, servers: &Servers) -> Option<String> {
    let name = server_ref(decoded, field, servers)?;
    if servers.lookup(&name) == Lookup::Found(Some(false)) {
        let message =
            format!("faults need a world server, found {name:?}, which replays a cassette");
        decoded.problem(field.span.clone(), field.path.clone(), message);
        return None;
    }
    Some(name)
}

/// A reference to an `[[mcp]]` server by name.
pub(crate) fn server_ref(
    decoded: &mut Decoder,
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
