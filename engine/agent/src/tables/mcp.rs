//! Decoding of `[[mcp]]`: the MCP servers an agent can call, each backed by a world spec or
//! a cassette, and the names the other eval tables refer to them by.
//!
//! Decoding reads only the text; the files are opened once the whole scenario decoded
//! (`EvalTables::open`), and their problems placed at the field that names them.

use simtape::scenario::decoder::{one_of, path, Decoder, Field, PathField};

use simtape_mcp::actor::McpActor;
use simtape_mcp::world::faults::ToolFault;
use simtape_mcp::world::World;
use simtape_mcp::Cassette;

use crate::spec::{McpFault, McpServerSpec, McpSource};

/// The keys of an `[[mcp]]` entry.
const MCP_KEYS: [&str; 4] = ["name", "world", "cassette", "elicitation"];
/// The actions of an elicitation answer, as MCP names them.
const ELICIT_ACTIONS: [&str; 3] = ["accept", "decline", "cancel"];
/// Names `[agent] tools` gives the built-in tool groups, so no server may take them.
const TOOL_GROUPS: [&str; 2] = ["fs", "process"];
const WORLD: &str = "a world spec path relative to the scenario file";
const CASSETTE: &str = "a cassette path relative to the scenario file";

/// The `[[mcp]]` servers as the other tables see them, known even when an entry is bad.
#[derive(Debug, Default)]
pub(crate) struct Servers {
    /// Each server whose name decoded, in file order.
    pub(crate) names: Vec<ServerRef>,
    /// Whether every entry's name decoded: only then is a name missing here really unknown.
    pub(crate) complete: bool,
}

/// One server as a reference finds it.
#[derive(Debug, Clone)]
pub(crate) struct ServerRef {
    pub(crate) name: String,
    /// Whether a world backs it; `None` when its source did not decode.
    pub(crate) world: Option<bool>,
    /// The field path of its name.
    pub(crate) field: String,
}

/// What a reference to a server by name finds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lookup {
    /// The server, with whether a world backs it (`None`: its source is bad).
    Found(Option<bool>),
    /// No such server.
    Unknown,
    /// Some server's name is bad, so the reference cannot be judged.
    Unsure,
}

impl Servers {
    /// Looks up a server by name.
    pub(crate) fn lookup(&self, name: &str) -> Lookup {
        match self.names.iter().find(|known| known.name == name) {
            Some(known) => Lookup::Found(known.world),
            None if self.complete => Lookup::Unknown,
            None => Lookup::Unsure,
        }
    }

    /// Describes the known names for an error message: "(`a`, `b`)" or "(the scenario has
    /// none)".
    pub(crate) fn known(&self) -> String {
        if self.names.is_empty() {
            return "(the scenario has none)".to_string();
        }
        let names: Vec<&str> = self.names.iter().map(|known| known.name.as_str()).collect();
        format!("({})", one_of(&names))
    }
}

/// Decoder `[[mcp]]` entries: the servers and where each one's file is named.
pub(crate) type McpTable = Vec<(McpServerSpec, PathField)>;

/// Decodes `[[mcp]]`. The servers come back even when the table has problems, for the
/// references of the other tables.
pub(crate) fn mcp(decoded: &mut Decoder, field: &Field<'_>) -> (Option<McpTable>, Servers) {
    let mut servers = Servers {
        names: Vec::new(),
        complete: true,
    };
    let Some(items) = decoded.array(field, "an array of [[mcp]] tables") else {
        servers.complete = false;
        return (None, servers);
    };
    let mut entries = Some(Vec::new());
    for item in &items {
        let entry = server(decoded, item, &mut servers);
        entries = entries.zip(entry).map(|(mut all, one)| {
            all.push(one);
            all
        });
    }
    (entries, servers)
}

fn server(
    decoded: &mut Decoder,
    field: &Field<'_>,
    servers: &mut Servers,
) -> Option<(McpServerSpec, PathField)> {
    let what = "an [[mcp]] table like { name = \"tickets\", world = \"worlds/tickets.json\" }";
    let Some(mut fields) = decoded.table(field, what) else {
        servers.complete = false;
        return None;
    };
    let name = match fields.take("name") {
        Some(name) => server_name(decoded, &name, servers).map(|n| (n, name.path)),
        None => {
            decoded.missing(&fields, "name", "a server name of a-z, 0-9 and -");
            Err(false)
        }
    };
    let world = fields.take("world");
    let cassette = fields.take("cassette");
    let source = match (world, cassette) {
        (Some(world), None) => path(decoded, &world, WORLD).map(|p| (true, p)),
        (None, Some(cassette)) => path(decoded, &cassette, CASSETTE).map(|p| (false, p)),
        (Some(_), Some(cassette)) => {
            let message = "expected either `world` or `cassette`, found both".to_string();
            decoded.problem(cassette.span.clone(), cassette.path.clone(), message);
            None
        }
        (None, None) => {
            let what = "a backing: `world = \"worlds/x.json\"` or `cassette = \"data/x.jsonl\"`";
            decoded.missing(&fields, "world", what);
            None
        }
    };
    let elicitation = match fields.take("elicitation") {
        Some(answers) => elicitation(decoded, &answers),
        None => Some(Vec::new()),
    };
    fields.finish(
        decoded,
        &format!("unknown key, expected one of {}", one_of(&MCP_KEYS)),
    );
    let name = match name {
        Ok((name, field)) => {
            let world = source.as_ref().map(|(world, _)| *world);
            let known = ServerRef {
                name: name.clone(),
                world,
                field,
            };
            servers.names.push(known);
            name
        }
        Err(named) => {
            // A name already taken is still a known name; a bad one leaves references unsure.
            servers.complete &= named;
            return None;
        }
    };
    let (world, file) = source?;
    let written = std::path::PathBuf::from(&file.path);
    let source = if world {
        McpSource::World(written)
    } else {
        McpSource::Cassette(written)
    };
    let server = McpServerSpec {
        name,
        source,
        elicitation: elicitation?,
    };
    Some((server, file))
}

/// Decodes `elicitation`: the agent's answers to `elicitation/create`, in order, each
/// `{ action = "accept", content = { … } }` or `{ action = "decline" }` / `"cancel"`.
fn elicitation(decoded: &mut Decoder, field: &Field<'_>) -> Option<Vec<serde_json::Value>> {
    let what = "an array of answers like [{ action = \"accept\", content = { name = \"Ada\" } }]";
    let items = decoded.array(field, what)?;
    let answers: Vec<Option<serde_json::Value>> = items
        .iter()
        .map(|item| elicit_answer(decoded, item))
        .collect();
    answers.into_iter().collect()
}

fn elicit_answer(decoded: &mut Decoder, field: &Field<'_>) -> Option<serde_json::Value> {
    let what = "an answer like { action = \"accept\", content = { name = \"Ada\" } }";
    let mut fields = decoded.table(field, what)?;
    let expected = format!("one of {}", one_of(&ELICIT_ACTIONS));
    let action = match fields.take("action") {
        Some(action) => {
            let text = decoded.string(&action, &expected);
            let known = text.filter(|text| ELICIT_ACTIONS.contains(text));
            if text.is_some() && known.is_none() {
                decoded.expected(&action, &expected);
            }
            known
        }
        None => {
            decoded.missing(&fields, "action", &expected);
            None
        }
    };
    let content = fields.take("content");
    fields.finish(decoded, "unknown key, expected `action` or `content`");
    let action = action?;
    let mut answer = serde_json::json!({ "action": action });
    match content {
        Some(content) if action != "accept" => {
            let message = format!("`content` goes only with action \"accept\", found {action:?}");
            decoded.problem(content.span.clone(), content.path.clone(), message);
            return None;
        }
        Some(content) if !content.is_table() => {
            decoded.expected(&content, "a table of the requested fields");
            return None;
        }
        Some(content) => answer["content"] = decoded.json(&content)?,
        None => {}
    }
    Some(answer)
}

/// A server name: a name, not one of the built-in tool groups, not used before. The error
/// says whether the name is still a known server's (`true` when another entry has it).
fn server_name(
    decoded: &mut Decoder,
    field: &Field<'_>,
    servers: &Servers,
) -> Result<String, bool> {
    let name = decoded.name(field).ok_or(false)?;
    let (message, named) = if TOOL_GROUPS.contains(&name.as_str()) {
        let message = format!(
            "the server name {name:?} is reserved: `[agent] tools` uses it for the built-in {name} tools"
        );
        (message, false)
    } else if let Some(earlier) = servers.names.iter().find(|known| known.name == name) {
        let message = format!(
            "expected a server name not used before, found {name:?}, which `{}` already names",
            earlier.field
        );
        (message, true)
    } else {
        return Ok(name);
    };
    decoded.problem(field.span.clone(), field.path.clone(), message);
    Err(named)
}

/// Why an `[[mcp]]` server could not be opened. Fatal to loading the scenario: each is
/// reported at the `[[mcp]]` field that names the file.
#[derive(Debug, thiserror::Error)]
pub(crate) enum OpenError {
    /// The cassette does not load.
    #[error("{0}")]
    Cassette(simtape_mcp::McpError),
    /// The world spec does not load.
    #[error("{0}")]
    World(simtape_mcp::world::SpecError),
    /// The scenario's fault rules for the server do not fit its world.
    #[error("the [[faults.mcp]] rules do not fit the world: {0}")]
    Faults(simtape_mcp::world::SpecError),
}

impl OpenError {
    /// Returns the `[[mcp]]` key that names the file.
    pub(crate) fn key(&self) -> &'static str {
        match self {
            OpenError::Cassette(_) => "cassette",
            OpenError::World(_) | OpenError::Faults(_) => "world",
        }
    }
}

/// Opens one `[[mcp]]` server: parses its cassette, or compiles its world spec with the
/// server's fault rules among `faults` added.
pub(crate) fn open_server(
    server: &McpServerSpec,
    faults: &[McpFault],
) -> Result<McpActor, OpenError> {
    let path = match &server.source {
        McpSource::Cassette(path) => {
            let cassette = Cassette::load(path).map_err(OpenError::Cassette)?;
            cassette.check_servable().map_err(|reason| {
                OpenError::Cassette(simtape_mcp::McpError::CassetteInvalid {
                    path: path.clone(),
                    reason: reason.to_string(),
                })
            })?;
            return Ok(McpActor::from_cassette(cassette));
        }
        McpSource::World(path) => path,
    };
    let world = World::load(path).map_err(OpenError::World)?;
    let rules: Vec<ToolFault> = faults
        .iter()
        .filter(|fault| fault.server == server.name)
        .map(McpFault::world_rule)
        .collect();
    if rules.is_empty() {
        return Ok(McpActor::from_world(world));
    }
    let world = world.with_faults(rules).map_err(OpenError::Faults)?;
    Ok(McpActor::from_world(world))
}
