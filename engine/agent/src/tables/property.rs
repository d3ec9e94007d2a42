//! Decoding of `[[property]]`: conditions judged in every run (`always`, `unreachable`) and
//! over a sweep (`sometimes`, `reachable`).
//!
//! An entry has a `name`, a `kind`, and a condition of one or more parts, all of which must
//! be true: `check` (a verifier kind, with that kind's keys: a file's state, the answer, a
//! tool called, a world's goal, an outcome), `retries` (the agent retried at least this many
//! calls: it met that many faults and went on), `verdict` (the run's verdict by its
//! verifiers).

use simtape::scenario::decoder::{one_of, Decoder, Field};
use simtape::scenario::Tables;
use simtape_eval::property::PropertyKind;
use simtape_eval::VerdictKind;

use super::mcp::{Lookup, Servers};
use super::verify::{check_of, VERIFY_KINDS};
use crate::spec::{Check, PropertySpec};

/// A property's own keys, besides those of its `check` kind.
const PROPERTY_KEYS: [&str; 5] = ["name", "kind", "check", "retries", "verdict"];
/// The verdicts a `verdict` condition names.
const VERDICTS: [(&str, VerdictKind); 4] = [
    ("pass", VerdictKind::Pass),
    ("fail", VerdictKind::Fail),
    ("blocked", VerdictKind::Blocked),
    ("error", VerdictKind::Error),
];

/// Decodes `[[property]]`; `tables` gives each entry's line.
pub(crate) fn properties(
    decoded: &mut Decoder,
    field: &Field<'_>,
    servers: &Servers,
    tables: &Tables<'_>,
) -> Option<Vec<PropertySpec>> {
    let items = decoded.array(field, "an array of [[property]] tables")?;
    let properties: Vec<Option<PropertySpec>> = items
        .iter()
        .map(|item| property(decoded, item, servers, tables))
        .collect();
    let properties: Vec<PropertySpec> = properties.into_iter().collect::<Option<_>>()?;
    for (index, property) in properties.iter().enumerate() {
        if properties[..index].iter().any(|p| p.name == property.name) {
            let at = &items[index];
            decoded.problem(
                at.span.clone(),
                format!("{}.name", at.path),
                format!(
                    "a second property named {:?}: names must be unique",
                    property.name
                ),
            );
            return None;
        }
    }
    Some(properties)
}

fn property(
    decoded: &mut Decoder,
    field: &Field<'_>,
    servers: &Servers,
    tables: &Tables<'_>,
) -> Option<PropertySpec> {
    let what = "a [[property]] table like { name = \"…\", kind = \"sometimes\", retries = 1 }";
    let mut fields = decoded.table(field, what)?;
    let name = match fields.take("name") {
        Some(name) => decoded.label(&name),
        None => {
            decoded.missing(&fields, "name", "the property's name");
            None
        }
    };
    let kinds: Vec<&str> = PropertyKind::ALL.iter().map(|(name, _)| *name).collect();
    let what_kind = format!("a property kind {}", one_of(&kinds));
    let kind = match fields.take("kind") {
        Some(kind) => named(decoded, &kind, &PropertyKind::ALL, &what_kind),
        None => {
            decoded.missing(&fields, "kind", &what_kind);
            None
        }
    };
    // A property's check reads the run as a verifier does; a gate would run a program.
    let checks: Vec<(&str, &[&str])> = VERIFY_KINDS
        .iter()
        .copied()
        .filter(|(kind, _)| *kind != "gate")
        .collect();
    let (check_kind, check) = match fields.take("check") {
        Some(kind_field) => {
            match check_of(
                decoded,
                &mut fields,
                &kind_field,
                &checks,
                servers,
                true,
                field,
            ) {
                Some((kind, Some(check))) => (Some(kind), Some(Some(check))),
                Some((kind, None)) => (Some(kind), None),
                None => (None, None),
            }
        }
        None => (None, Some(None)),
    };
    if let (Some(Some(check)), Some(tool)) = (&check, fields.take("tool")) {
        known_server(decoded, check, &tool, servers);
    }
    let retries = match fields.take("retries") {
        Some(retries) => decoded
            .integer(&retries, 1, 1_000, "a number of retries, 1 to 1,000")
            .map(|n| Some(n as u32)),
        None => Some(None),
    };
    let names: Vec<&str> = VERDICTS.iter().map(|(name, _)| *name).collect();
    let what_verdict = format!("a verdict {}", one_of(&names));
    let verdict = match fields.take("verdict") {
        Some(verdict) => named(decoded, &verdict, &VERDICTS, &what_verdict).map(Some),
        None => Some(None),
    };
    let extras = check_kind
        .and_then(|kind| checks.iter().find(|(known, _)| *known == kind))
        .map_or(&[][..], |(_, extras)| *extras);
    let keys: Vec<&str> = PROPERTY_KEYS.iter().chain(extras).copied().collect();
    let suffix = check_kind.map_or(String::new(), |kind| format!(" (for check `{kind}`)"));
    fields.finish(
        decoded,
        &format!("unknown key, expected one of {}{suffix}", one_of(&keys)),
    );
    let (name, kind, check, retries, verdict) = (name?, kind?, check?, retries?, verdict?);
    if check.is_none() && retries.is_none() && verdict.is_none() {
        decoded.problem(
            field.span.clone(),
            field.path.clone(),
            "a property needs a condition: `check` (a verifier kind and its keys), `retries` \
             or `verdict`"
                .into(),
        );
        return None;
    }
    Some(PropertySpec {
        name,
        kind,
        line: tables.line(field),
        check,
        retries,
        verdict,
    })
}

/// The value of `field` among `known` (by name), or a problem saying `what` it must be.
fn named<T: Copy>(
    decoded: &mut Decoder,
    field: &Field<'_>,
    known: &[(&str, T)],
    what: &str,
) -> Option<T> {
    let text = decoded.string(field, what)?;
    let found = known
        .iter()
        .find(|(name, _)| *name == text)
        .map(|(_, value)| *value);
    if found.is_none() {
        decoded.expected(field, what);
    }
    found
}

/// An MCP tool is `server__tool`: a server the scenario does not have is a typo that would
/// leave the property never hit, so it is a problem at the `tool` field.
fn known_server(decoded: &mut Decoder, check: &Check, field: &Field<'_>, servers: &Servers) {
    let Check::ToolCalled { tool, .. } = check else {
        return;
    };
    let Some((server, _)) = tool.split_once("__") else {
        return;
    };
    if matches!(servers.lookup(server), Lookup::Unknown) {
        decoded.problem(
            field.span.clone(),
            field.path.clone(),
            format!(
                "no [[mcp]] server named {server:?} for tool {tool:?}: expected one of {}",
                servers.known()
            ),
        );
    }
}
