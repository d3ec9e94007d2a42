//! Decoding of `[[faults.mcp]]`: tool calls to an MCP world server that fail, by call number
//! or seeded rate, with the trigger and value decoders the core's own rules use. The keys of
//! each kind are decoded by the world's fault module (`KINDS`, `decode_kind`), which owns what
//! a kind does: a new kind is added there alone.

use simtape::scenario::decoder::{one_of, rule_array, text, trigger, Decoder, Field};

use simtape_mcp::world::faults::{decode_kind, KINDS};

use super::mcp::{Lookup, Servers};
use crate::spec::McpFault;

/// The keys every `[[faults.mcp]]` rule takes, whatever its kind.
const MCP_KEYS: [&str; 5] = ["server", "tool", "on_call", "rate", "kind"];

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
    let kinds: Vec<&str> = KINDS.iter().map(|(kind, _)| *kind).collect();
    let what = format!("a fault kind {}", one_of(&kinds));
    let kind = match fields.take("kind") {
        Some(kind) => match decoded.string(&kind, &what) {
            Some(name) => match KINDS.iter().find(|(known, _)| *known == name) {
                Some((name, extras)) => {
                    let kind = decode_kind(decoded, &mut fields, name);
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
