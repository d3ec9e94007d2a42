//! Decisions files: the overrides `simtape run --decisions FILE` takes (see
//! `simtape::decision`), and the list `--decisions-out FILE` writes.
//!
//! A file is JSON, either a bare list `[{"name": "llm#0", "value": 7}, …]` or an object
//! `{"scenario": "<digest>", "decisions": […]}`; the object form is what `--decisions-out`
//! and `simtape shrink` write, and its scenario digest refuses the file on another scenario.

use std::path::Path;
use std::sync::Arc;

use simtape::decision::{Decision, DecisionBook};
use simtape::tape::sha256_hex;

use crate::exit::CliError;

/// The object form of a decisions file.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct DecisionsFile {
    /// The hex SHA-256 of the scenario source the decisions belong to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) scenario: Option<String>,
    /// The decisions, in the order the run took them.
    pub(crate) decisions: Vec<Decision>,
}

/// A loaded decisions file: the book to run with and the file's digest for the tape header.
pub(crate) struct Loaded {
    pub(crate) book: Arc<DecisionBook>,
    pub(crate) digest: String,
}

/// Reads `path`, checking it against the scenario whose source digest is `scenario_digest`.
/// Every mismatch is a usage error (exit 2) naming the file and the field.
pub(crate) fn load(path: &Path, scenario_digest: &str) -> Result<Loaded, CliError> {
    let bytes = simtape::input::read_input(path, simtape::limits::InputFile::Decisions)?;
    let usage =
        |field: &str, why: &str| CliError::Usage(format!("{}: {field}: {why}", path.display()));
    let value: serde_json::Value = serde_json::from_slice(&bytes)
        .map_err(|error| usage("(file)", &format!("not JSON: {error}")))?;
    // Read by hand, not by serde's derive, so a wrong type names its field.
    let (list, prefix) = match &value {
        serde_json::Value::Array(list) => (list, "decisions"),
        serde_json::Value::Object(object) => {
            if let Some(key) = object
                .keys()
                .find(|key| *key != "scenario" && *key != "decisions")
            {
                return Err(usage(key, "unknown field (expected scenario, decisions)"));
            }
            match object.get("scenario") {
                None => {}
                Some(serde_json::Value::String(digest)) if digest == scenario_digest => {}
                Some(serde_json::Value::String(digest)) => {
                    return Err(usage(
                        "scenario",
                        &format!(
                            "the decisions were taken on scenario {digest}, not this one \
                             ({scenario_digest})"
                        ),
                    ))
                }
                Some(_) => return Err(usage("scenario", "expected a hex digest string")),
            }
            match object.get("decisions") {
                Some(serde_json::Value::Array(list)) => (list, "decisions"),
                _ => return Err(usage("decisions", "expected a list of decisions")),
            }
        }
        _ => return Err(usage("(file)", "expected a list of decisions or an object")),
    };
    let mut decisions = Vec::with_capacity(list.len());
    for (index, item) in list.iter().enumerate() {
        let field = |name: &str| format!("{prefix}[{index}].{name}");
        let object = item
            .as_object()
            .ok_or_else(|| usage(&format!("{prefix}[{index}]"), "expected {name, value}"))?;
        // `kind` and `record` say what a written-out value meant and where the run took it;
        // an override is bits only.
        if let Some(key) = object
            .keys()
            .find(|key| !["name", "value", "kind", "record"].contains(&key.as_str()))
        {
            return Err(usage(
                &field(key),
                "unknown field (expected name, value, kind, record)",
            ));
        }
        let name = object
            .get("name")
            .and_then(serde_json::Value::as_str)
            .ok_or_else(|| usage(&field("name"), "expected a string (actor#n)"))?;
        let well_formed = name
            .rsplit_once('#')
            .is_some_and(|(stream, n)| !stream.is_empty() && n.parse::<u64>().is_ok());
        if !well_formed {
            return Err(usage(
                &field("name"),
                &format!("{name:?} is not a decision name (actor#n)"),
            ));
        }
        let value = object
            .get("value")
            .and_then(serde_json::Value::as_u64)
            .ok_or_else(|| usage(&field("value"), "expected an unsigned 64-bit integer"))?;
        decisions.push(Decision {
            name: name.to_string(),
            value,
            draw: None,
            record: None,
        });
    }
    Ok(Loaded {
        book: DecisionBook::new(&decisions),
        digest: sha256_hex(&bytes),
    })
}

/// After a run with `book` from `path`: an override the run never took names a decision the
/// scenario does not make at this seed, so the file does not fit it.
pub(crate) fn check_used(path: &Path, book: &DecisionBook) -> Result<(), CliError> {
    match book.unused().first() {
        None => Ok(()),
        Some(name) => {
            let index = book
                .overrides()
                .iter()
                .position(|d| &d.name == name)
                .unwrap_or(0);
            Err(CliError::Usage(format!(
                "{}: decisions[{index}].name: the run never takes decision {name:?} (unknown \
                 actor stream, or more draws than the run makes)",
                path.display()
            )))
        }
    }
}

/// Writes the decisions a run took to `path`, in the object form, stamped with the scenario.
pub(crate) fn write(
    path: &Path,
    scenario_digest: &str,
    decisions: Vec<Decision>,
) -> Result<(), CliError> {
    let file = DecisionsFile {
        scenario: Some(scenario_digest.to_string()),
        decisions,
    };
    let mut text = serde_json::to_string_pretty(&file).map_err(|error| {
        CliError::Usage(format!("{}: encoding decisions: {error}", path.display()))
    })?;
    text.push('\n');
    crate::common::files::create_parent(path)?;
    std::fs::write(path, text).map_err(CliError::io(path))
}
