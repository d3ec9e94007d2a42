//! Decisions files: the overrides `simtape run --decisions FILE` takes (see
//! `simtape::decision`), the list `--decisions-out FILE` and `simtape shrink` write, and the
//! first seed's decisions the failure database keeps (docs/failures.md).
//!
//! A file is JSON, either a bare list `[{"name": "llm#0", "value": 7}, …]` or an object
//! `{"scenario": "<digest>", "decisions": […]}`; the object form is what is written, and its
//! scenario digest refuses the file on another scenario. Reading the bytes (within their
//! size cap) is the caller's; this module only decides what they say.
//!
//! ```
//! use std::path::Path;
//! use simtape_eval::decisions::{encode, parse};
//! let text = r#"{"scenario": "ab12", "decisions": [{"name": "llm#0", "value": 7}]}"#;
//! let decisions = parse(Path::new("d.json"), text.as_bytes(), "ab12").unwrap();
//! assert_eq!((decisions[0].name.as_str(), decisions[0].value), ("llm#0", 7));
//! let refused = parse(Path::new("d.json"), text.as_bytes(), "cd34").unwrap_err();
//! assert_eq!(
//!     refused.to_string(),
//!     "d.json: scenario: the decisions were taken on scenario ab12, not this one (cd34)"
//! );
//! assert!(encode(Some("ab12"), decisions).ends_with("}\n"));
//! ```

use std::path::{Path, PathBuf};

use simtape::decision::Decision;

/// The object form of a decisions file.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DecisionsFile {
    /// The hex SHA-256 of the scenario source the decisions belong to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scenario: Option<String>,
    /// The decisions, in the order the run took them.
    pub decisions: Vec<Decision>,
}

/// A decisions file that does not read, or does not fit the scenario: its file, the field at
/// fault (`(file)` for the whole) and why. Fatal to the command that reads it.
#[derive(Debug, thiserror::Error)]
#[error("{}: {field}: {why}", path.display())]
pub struct DecisionsFileError {
    /// The file.
    pub path: PathBuf,
    /// The field at fault, as a JSON path (`decisions[2].value`), or `(file)`.
    pub field: String,
    /// What is wrong with it.
    pub why: String,
}

/// Returns the decisions of the file `path` whose bytes are `bytes`, checked against the
/// scenario whose source digest is `scenario_digest`; every mismatch names its field.
pub fn parse(
    path: &Path,
    bytes: &[u8],
    scenario_digest: &str,
) -> Result<Vec<Decision>, DecisionsFileError> {
    let fault = |field: &str, why: &str| DecisionsFileError {
        path: path.to_path_buf(),
        field: field.to_string(),
        why: why.to_string(),
    };
    let value: serde_json::Value = serde_json::from_slice(bytes)
        .map_err(|error| fault("(file)", &format!("not JSON: {error}")))?;
    // Read by hand, not by serde's derive, so a wrong type names its field.
    let (list, prefix) = match &value {
        serde_json::Value::Array(list) => (list, "decisions"),
        serde_json::Value::Object(object) => {
            if let Some(key) = object
                .keys()
                .find(|key| *key != "scenario" && *key != "decisions")
            {
                return Err(fault(key, "unknown field (expected scenario, decisions)"));
            }
            match object.get("scenario") {
                None => {}
                Some(serde_json::Value::String(digest)) if digest == scenario_digest => {}
                Some(serde_json::Value::String(digest)) => {
                    return Err(fault(
                        "scenario",
                        &format!(
                            "the decisions were taken on scenario {digest}, not this one \
                             ({scenario_digest})"
                        ),
                    ))
                }
                Some(_) => return Err(fault("scenario", "expected a hex digest string")),
            }
            match object.get("decisions") {
                Some(serde_json::Value::Array(list)) => (list, "decisions"),
                _ => return Err(fault("decisions", "expected a list of decisions")),
            }
        }
        _ => return Err(fault("(file)", "expected a list of decisions or an object")),
    };
    let mut decisions = Vec::with_capacity(list.len());
    for (index, item) in list.iter().enumerate() {
        let field = |name: &str| format!("{prefix}[{index}].{name}");
        let object = item
            .as_object()
            .ok_or_else(|| fault(&format!("{prefix}[{index}]"), "expected {name, value}"))?;
        // `kind` and `record` say what a written-out value meant and where the run took it;
        // an override is bits only.
        if let Some(key) = object
            .keys()
            .find(|key| !["name", "value", "kind", "record"].contains(&key.as_str()))
        {
            return Err(fault(
                &field(key),
                "unknown field (expected name, value, kind, record)",
            ));
        }
        let name = object
            .get("name")
            .and_then(serde_json::Value::as_str)
            .ok_or_else(|| fault(&field("name"), "expected a string (actor#n)"))?;
        let well_formed = name
            .rsplit_once('#')
            .is_some_and(|(stream, n)| !stream.is_empty() && n.parse::<u64>().is_ok());
        if !well_formed {
            return Err(fault(
                &field("name"),
                &format!("{name:?} is not a decision name (actor#n)"),
            ));
        }
        let value = object
            .get("value")
            .and_then(serde_json::Value::as_u64)
            .ok_or_else(|| fault(&field("value"), "expected an unsigned 64-bit integer"))?;
        decisions.push(Decision {
            name: name.to_string(),
            value,
            draw: None,
            record: None,
        });
    }
    Ok(decisions)
}

/// Returns the scenario digest the decisions file `path` (its text `text`) is stamped with,
/// if any.
pub fn stamped_digest(path: &Path, text: &str) -> Result<Option<String>, DecisionsFileError> {
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|error| DecisionsFileError {
            path: path.to_path_buf(),
            field: "(file)".to_string(),
            why: format!("not JSON: {error}"),
        })?;
    Ok(value
        .get("scenario")
        .and_then(serde_json::Value::as_str)
        .map(str::to_string))
}

/// Returns the text of a decisions file in the object form, stamped with `scenario` when
/// given, ending in a newline.
pub fn encode(scenario: Option<&str>, decisions: Vec<Decision>) -> String {
    let file = DecisionsFile {
        scenario: scenario.map(str::to_string),
        decisions,
    };
    // A `Decision` is strings, integers and optional plain enums: JSON always encodes it.
    let mut text = serde_json::to_string_pretty(&file).expect("decisions encode as JSON");
    text.push('\n');
    text
}
