//! Replay fixtures: the entries a model call is matched against, and the simtape JSONL format.
//!
//! A file is detected by its first non-blank line: `{"simtape_llm": 1, …}` is our format,
//! `{"schemaVersion": …}` is Harn v1, anything else is Harn v0 ([`super::harn`]). Every error
//! names the file, the line, what was expected and what was found; no input panics.

use serde::Deserialize;

use super::latency::{LatencyModel, LatencyOverride, UsageRule};
use super::matcher::{EntryMatch, TextPattern};

/// The most entries one fixture may hold (a bound, as everywhere in the engine).
pub const ENTRIES_MAX: usize = 100_000;

/// A fixture that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FixtureError {
    /// The file cannot be read. Fatal for the run being built.
    #[error("{path}: cannot read the LLM fixture: {detail}")]
    Io {
        /// The file.
        path: String,
        /// The OS error.
        detail: String,
    },
    /// A line is not what the format expects. Fatal: fix the fixture.
    #[error("{file}:{line}: expected {expected}, found {found}")]
    Malformed {
        /// The file (or the name given to a fixture read from a string).
        file: String,
        /// The 1-based line.
        line: u64,
        /// What the format expects there.
        expected: String,
        /// What the line holds instead.
        found: String,
    },
}

/// Which format a fixture was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FixtureFormat {
    /// simtape's own JSONL (`docs/llm-fixtures.md`).
    Simtape,
    /// Harn `--llm-mock` JSONL without a header.
    HarnV0,
    /// Harn `--llm-mock` JSONL with `{"schemaVersion":1}`.
    HarnV1,
}

/// Whether an entry survives its use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reuse {
    /// Used at most once.
    Once,
    /// Used any number of times.
    Sticky,
}

/// Which requests an entry applies to, by the request's scope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScopeRule {
    /// Requests in this scope only; these entries are tried first.
    Named(String),
    /// Every request, after its own scope's entries (Harn's `shared`); an unscoped request
    /// tries [`ScopeRule::Any`] entries first.
    Shared,
    /// Every request, last.
    Any,
    /// Only unscoped requests (Harn's `default` scope under `strictScopes`).
    Unscoped,
}

impl ScopeRule {
    /// Returns the rank of this rule for a request in `scope` (lower is tried first), or
    /// `None` when it does not apply.
    pub fn rank(&self, scope: Option<&str>) -> Option<u8> {
        let unscoped = matches!(scope, None | Some("default"));
        match self {
            ScopeRule::Named(name) => (scope == Some(name.as_str())).then_some(0),
            ScopeRule::Shared => Some(1),
            // An unscoped call is in Harn's `default` scope, which it tries before `shared`.
            ScopeRule::Any if unscoped => Some(0),
            ScopeRule::Any => Some(2),
            ScopeRule::Unscoped => unscoped.then_some(0),
        }
    }
}

/// A tool call in a fixture answer; a missing id is filled in at answer time.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolCallSpec {
    /// The call id, or `None` for `call_<turn>_<index>`.
    #[serde(default)]
    pub id: Option<String>,
    /// The tool's name.
    pub name: String,
    /// The arguments.
    #[serde(default)]
    pub arguments: serde_json::Value,
}

/// One possible answer.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResponseSpec {
    /// The text.
    #[serde(default)]
    pub text: String,
    /// The tool calls.
    #[serde(default)]
    pub tool_calls: Vec<ToolCallSpec>,
    /// The stop reason; default `tool_use` with tool calls, else `end_turn`.
    #[serde(default)]
    pub stop_reason: Option<String>,
    /// The token counts; each one missing is computed by the fixture's [`UsageRule`].
    #[serde(default)]
    pub usage: UsageSpec,
    /// The model name; default the request's.
    #[serde(default)]
    pub model: Option<String>,
    /// Extended thinking the answer starts with, served as a thinking block.
    #[serde(default)]
    pub thinking: Option<ThinkingSpec>,
}

/// A thinking block as a fixture gives it: the text alone, or the text with the signature a
/// provider sealed it with (as record mode writes it).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged, deny_unknown_fields)]
pub enum ThinkingSpec {
    /// The text; the signature is derived from it, so it is the same on every replay.
    Text(String),
    /// The text and its signature, served as given.
    Sealed {
        /// The reasoning text.
        text: String,
        /// The signature.
        signature: String,
    },
}

/// Token counts as a fixture gives them: either may be left to the [`UsageRule`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UsageSpec {
    /// Tokens of the prompt.
    #[serde(default)]
    pub input_tokens: Option<u64>,
    /// Tokens of the answer.
    #[serde(default)]
    pub output_tokens: Option<u64>,
}

/// A weighted answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Alternative {
    /// Its integer weight (zero: never picked).
    pub weight: u64,
    /// The answer.
    pub response: ResponseSpec,
}

/// A provider error to return instead of an answer.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpFailure {
    /// The HTTP status (400–599).
    pub status: u16,
    /// The provider's message.
    #[serde(default)]
    pub message: String,
    /// The `retry-after` the provider sends, in milliseconds.
    #[serde(default)]
    pub retry_after_ms: Option<u64>,
}

/// What an entry answers.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// One of these answers, picked by weight (one alternative draws nothing).
    Respond(Vec<Alternative>),
    /// An error.
    Fail(HttpFailure),
}

/// One fixture entry.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// The 1-based line it was read from (its name on the tape).
    pub line: u64,
    /// An optional id, for people.
    pub id: Option<String>,
    /// When it applies.
    pub matcher: EntryMatch,
    /// Whether it survives its use.
    pub mode: Reuse,
    /// Which scopes it applies to.
    pub scope: ScopeRule,
    /// What it answers.
    pub outcome: Outcome,
    /// Its latency model.
    pub latency: LatencyModel,
}

/// A parsed fixture: entries in precedence order.
#[derive(Debug, Clone, PartialEq)]
pub struct Fixture {
    /// The file name (or the name given to a string).
    pub source: String,
    /// The format it was read from.
    pub format: FixtureFormat,
    /// The entries, in the order they are tried (see `docs/llm-fixtures.md`).
    pub entries: Vec<Entry>,
    /// The rule for usage that an answer does not give.
    pub usage_rule: UsageRule,
}

impl Fixture {
    /// Reads a fixture file in any supported format.
    pub fn load(path: &std::path::Path) -> Result<Fixture, FixtureError> {
        let text = crate::input::read_input_text(path, crate::limits::InputFile::LlmFixture)
            .map_err(|e| FixtureError::Io {
                path: path.display().to_string(),
                detail: e.problem.to_string(),
            })?;
        Fixture::parse(&path.display().to_string(), &text)
    }

    /// Parses fixture text in any supported format; `source` names it in errors.
    ///
    /// ```
    /// use simtape::cap::llm::Fixture;
    /// let text = "{\"simtape_llm\":1}\n{\"response\":{\"text\":\"hi\"}}\n";
    /// assert_eq!(Fixture::parse("inline", text).unwrap().entries.len(), 1);
    /// let bad = "{\"simtape_llm\":1}\n{\"respons\":{}}\n";
    /// assert!(Fixture::parse("inline", bad).unwrap_err().to_string().starts_with("inline:2: "));
    /// ```
    pub fn parse(source: &str, text: &str) -> Result<Fixture, FixtureError> {
        let lines = Lines::new(source, text);
        let Some((first_line, first)) = lines.objects().next().transpose()? else {
            return Ok(Fixture {
                source: source.to_owned(),
                format: FixtureFormat::Simtape,
                entries: Vec::new(),
                usage_rule: UsageRule::BytesOver4,
            });
        };
        if first.contains_key("simtape_llm") {
            parse_simtape(&lines, first_line, first)
        } else {
            super::harn::parse(&lines, first_line, first)
        }
    }
}

/// The lines of one fixture, with their numbers and the file name for errors.
#[derive(Debug)]
pub(crate) struct Lines<'a> {
    pub(crate) source: &'a str,
    text: &'a str,
}

/// A JSON object of one line, with `_`-prefixed annotation keys removed.
pub(crate) type Object = serde_json::Map<String, serde_json::Value>;

impl<'a> Lines<'a> {
    fn new(source: &'a str, text: &'a str) -> Self {
        Lines { source, text }
    }

    /// Returns an error at `line`.
    pub(crate) fn error(
        &self,
        line: u64,
        expected: &str,
        found: impl Into<String>,
    ) -> FixtureError {
        FixtureError::Malformed {
            file: self.source.to_owned(),
            line,
            expected: expected.to_owned(),
            found: found.into(),
        }
    }

    /// Yields each non-blank, non-comment line as a JSON object, in order.
    pub(crate) fn objects(&self) -> impl Iterator<Item = Result<(u64, Object), FixtureError>> + '_ {
        self.text
            .lines()
            .enumerate()
            .map(|(index, line)| (index as u64 + 1, line.trim()))
            .filter(|(_, line)| !line.is_empty() && !line.starts_with('#'))
            .map(|(number, line)| self.object(number, line).map(|o| (number, o)))
    }

    fn object(&self, number: u64, line: &str) -> Result<Object, FixtureError> {
        let value: serde_json::Value = serde_json::from_str(line).map_err(|e| {
            self.error(
                number,
                "one JSON object on the line",
                format!("invalid JSON ({e})"),
            )
        })?;
        match value {
            serde_json::Value::Object(mut object) => {
                object.retain(|key, _| !key.starts_with('_'));
                Ok(object)
            }
            other => Err(self.error(number, "a JSON object", json_kind(&other))),
        }
    }

    /// Decodes `object` as `T`, naming `expected` on failure.
    pub(crate) fn decode<T: serde::de::DeserializeOwned>(
        &self,
        number: u64,
        expected: &str,
        object: Object,
    ) -> Result<T, FixtureError> {
        serde_json::from_value(serde_json::Value::Object(object))
            .map_err(|e| self.error(number, expected, e.to_string()))
    }
}

/// Returns a short description of a JSON value's kind, for "found …".
pub fn json_kind(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::Null => "null".to_owned(),
        serde_json::Value::Bool(b) => format!("the boolean {b}"),
        serde_json::Value::Number(n) => format!("the number {n}"),
        serde_json::Value::String(_) => "a string".to_owned(),
        serde_json::Value::Array(_) => "an array".to_owned(),
        serde_json::Value::Object(_) => "an object".to_owned(),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHeader {
    simtape_llm: u64,
    #[serde(default)]
    latency: LatencyOverride,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEntry {
    #[serde(rename = "match", default)]
    matcher: RawMatch,
    #[serde(default)]
    mode: Option<Reuse>,
    #[serde(default)]
    scope: Option<String>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    response: Option<ResponseSpec>,
    #[serde(default)]
    alternatives: Option<Vec<RawAlternative>>,
    #[serde(default)]
    error: Option<HttpFailure>,
    #[serde(default)]
    latency: LatencyOverride,
}

#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMatch {
    #[serde(default)]
    text: Option<RawPattern>,
    #[serde(default)]
    last_message: Option<RawPattern>,
    #[serde(default)]
    last_tool_result: Option<RawPattern>,
    #[serde(default)]
    model: Option<RawPattern>,
    #[serde(default)]
    tools: Vec<String>,
    #[serde(default)]
    turn: Option<u64>,
    #[serde(default)]
    scope_turn: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPattern {
    #[serde(default)]
    contains: Option<String>,
    #[serde(default)]
    glob: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAlternative {
    weight: u64,
    response: ResponseSpec,
}

fn parse_simtape(
    lines: &Lines<'_>,
    header_line: u64,
    header: Object,
) -> Result<Fixture, FixtureError> {
    let header: RawHeader = lines.decode(
        header_line,
        "a header {\"simtape_llm\": 1, \"latency\"?: {…}}",
        header,
    )?;
    if header.simtape_llm != 1 {
        return Err(lines.error(
            header_line,
            "format version 1 (\"simtape_llm\": 1)",
            format!("version {}", header.simtape_llm),
        ));
    }
    let latency = header.latency.apply(LatencyModel::default());
    let mut entries = Vec::new();
    for item in lines.objects().skip(1) {
        let (number, object) = item?;
        if entries.len() == ENTRIES_MAX {
            return Err(lines.error(number, &format!("at most {ENTRIES_MAX} entries"), "more"));
        }
        let raw: RawEntry =
            lines.decode(number, "a fixture entry (docs/llm-fixtures.md)", object)?;
        entries.push(entry(lines, number, raw, latency)?);
    }
    Ok(Fixture {
        source: lines.source.to_owned(),
        format: FixtureFormat::Simtape,
        entries,
        usage_rule: UsageRule::BytesOver4,
    })
}

fn entry(
    lines: &Lines<'_>,
    number: u64,
    raw: RawEntry,
    latency: LatencyModel,
) -> Result<Entry, FixtureError> {
    let outcome = match (raw.response, raw.alternatives, raw.error) {
        (Some(response), None, None) => Outcome::Respond(vec![Alternative {
            weight: 1,
            response,
        }]),
        (None, Some(alternatives), None) => {
            Outcome::Respond(alternatives_of(lines, number, alternatives)?)
        }
        (None, None, Some(failure)) => Outcome::Fail(failure_of(lines, number, failure)?),
        _ => {
            return Err(lines.error(
                number,
                "exactly one of \"response\", \"alternatives\" or \"error\"",
                "none or several",
            ))
        }
    };
    Ok(Entry {
        line: number,
        id: raw.id,
        matcher: matcher_of(lines, number, raw.matcher)?,
        mode: raw.mode.unwrap_or(Reuse::Once),
        scope: raw.scope.map_or(ScopeRule::Any, ScopeRule::Named),
        outcome,
        latency: raw.latency.apply(latency),
    })
}

fn alternatives_of(
    lines: &Lines<'_>,
    number: u64,
    raw: Vec<RawAlternative>,
) -> Result<Vec<Alternative>, FixtureError> {
    let total = raw
        .iter()
        .try_fold(0u64, |sum, a| sum.checked_add(a.weight));
    match total {
        Some(0) => Err(lines.error(
            number,
            "alternatives with a positive total weight",
            "a total of 0",
        )),
        None => Err(lines.error(number, "a total weight below 2^64", "an overflowing total")),
        Some(_) => Ok(raw
            .into_iter()
            .map(|a| Alternative {
                weight: a.weight,
                response: a.response,
            })
            .collect()),
    }
}

fn failure_of(
    lines: &Lines<'_>,
    number: u64,
    failure: HttpFailure,
) -> Result<HttpFailure, FixtureError> {
    if (400..=599).contains(&failure.status) {
        Ok(failure)
    } else {
        Err(lines.error(
            number,
            "an HTTP error status (400–599)",
            format!("status {}", failure.status),
        ))
    }
}

fn matcher_of(lines: &Lines<'_>, number: u64, raw: RawMatch) -> Result<EntryMatch, FixtureError> {
    let pattern =
        |field: &str, p: Option<RawPattern>| -> Result<Option<TextPattern>, FixtureError> {
            let expected = format!("\"{field}\" with exactly one of \"contains\" or \"glob\"");
            match p {
                None => Ok(None),
                Some(RawPattern {
                    contains: Some(s),
                    glob: None,
                }) => Ok(Some(TextPattern::Contains(s))),
                Some(RawPattern {
                    contains: None,
                    glob: Some(g),
                }) => TextPattern::glob(&g)
                    .map(Some)
                    .map_err(|found| lines.error(number, &expected, found.to_string())),
                Some(_) => Err(lines.error(number, &expected, "none or both")),
            }
        };
    Ok(EntryMatch {
        text: pattern("text", raw.text)?,
        last_message: pattern("last_message", raw.last_message)?,
        last_tool_result: pattern("last_tool_result", raw.last_tool_result)?,
        model: pattern("model", raw.model)?,
        tools: raw.tools,
        turn: raw.turn,
        scope_turn: raw.scope_turn,
    })
}
