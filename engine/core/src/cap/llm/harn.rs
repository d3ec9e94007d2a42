//! Harn `--llm-mock` JSONL (contract v0 and v1) read into simtape fixture entries.
//!
//! Harn's documented `--llm-mock` rules map onto ours like this:
//! - Within a scope Harn takes the first entry *without* `match` (FIFO) before any pattern
//!   entry, so FIFO entries are placed before pattern entries, each group in file order.
//! - `match` is a `*`-only glob over the match text; other glob characters are escaped.
//! - Scope fallback (own scope → `shared` → `default` unless `strictScopes`) becomes the
//!   [`ScopeRule`] ranks `Named` → `Shared` → `Any` (or `Unscoped` when strict).
//! - FIFO entries are `once`; pattern entries are `sticky` unless `consume_match: true` (v0) or
//!   `consume: "once"` (v1).
//! - Missing usage follows Harn's defaults ([`UsageRule::Harn`]); the model defaults to `mock`.
//! - Fields with no replay meaning here (`thinking`, `blocks`, `logprobs`, cache tokens, …) are
//!   accepted and ignored; unknown fields are errors, as in Harn; `_` keys are annotations.
//! - `liveAfterCalls` is refused: a simtape replay never reaches a real provider.

use serde::Deserialize;

use super::fixture::{
    Alternative, Entry, Fixture, FixtureError, FixtureFormat, HttpFailure, Lines, Object, Outcome,
    ResponseSpec, Reuse, ScopeRule, ToolCallSpec, UsageSpec, ENTRIES_MAX,
};
use super::latency::{LatencyModel, UsageRule};
use super::matcher::{EntryMatch, TextPattern};

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawHeader {
    schema_version: u64,
    #[serde(default)]
    strict_scopes: bool,
    #[serde(default)]
    live_after_calls: Option<u64>,
}

// Some fields are only accepted (Harn compatibility) and never read.
#[allow(dead_code)]
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEntry {
    #[serde(rename = "match", default)]
    pattern: Option<String>,
    #[serde(default)]
    consume_match: Option<bool>,
    #[serde(default)]
    consume: Option<Reuse>,
    #[serde(default)]
    scope: Option<String>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    text: String,
    #[serde(default)]
    stream_chunks: Vec<String>,
    #[serde(default)]
    tool_calls: Vec<RawToolCall>,
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    usage: Option<RawUsage>,
    #[serde(default)]
    stop_reason: Option<String>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    error: Option<RawError>,
    // Accepted for compatibility; nothing in a replay answer carries them yet.
    #[serde(default)]
    raw_tool_calls: serde_json::Value,
    #[serde(default)]
    cache_read_tokens: Option<u64>,
    #[serde(default, alias = "cache_creation_input_tokens")]
    cache_write_tokens: Option<u64>,
    #[serde(default)]
    thinking: serde_json::Value,
    #[serde(default)]
    thinking_summary: serde_json::Value,
    #[serde(default)]
    provider: Option<String>,
    #[serde(default)]
    blocks: serde_json::Value,
    #[serde(default)]
    logprobs: serde_json::Value,
}

#[allow(dead_code)]
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawToolCall {
    #[serde(default)]
    id: Option<String>,
    #[serde(default, rename = "type")]
    kind: Option<String>,
    name: String,
    #[serde(default, alias = "args")]
    arguments: serde_json::Value,
}

#[allow(dead_code)]
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawUsage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    #[serde(default)]
    total_tokens: Option<u64>,
    #[serde(default)]
    cache_read_tokens: Option<u64>,
    #[serde(default, alias = "cache_creation_input_tokens")]
    cache_write_tokens: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawError {
    #[serde(default)]
    category: Option<String>,
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    status: Option<u16>,
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    reason: Option<String>,
    #[serde(default)]
    retry_after_ms: Option<u64>,
}

/// Parses a Harn fixture whose first object (at `first_line`) is `first`.
pub(crate) fn parse(
    lines: &Lines<'_>,
    first_line: u64,
    first: Object,
) -> Result<Fixture, FixtureError> {
    let (format, strict, skip) = if first.contains_key("schemaVersion") {
        let header: RawHeader = lines.decode(
            first_line,
            "a Harn header {\"schemaVersion\":1,\"strictScopes\"?:bool}",
            first,
        )?;
        if header.schema_version != 1 {
            let found = format!("schemaVersion {}", header.schema_version);
            return Err(lines.error(first_line, "schemaVersion 1", found));
        }
        if header.live_after_calls.is_some() {
            let expected = "no \"liveAfterCalls\" (a simtape replay never goes live)";
            return Err(lines.error(first_line, expected, "\"liveAfterCalls\""));
        }
        (FixtureFormat::HarnV1, header.strict_scopes, 1)
    } else {
        (FixtureFormat::HarnV0, false, 0)
    };
    let mut fifo = Vec::new();
    let mut patterned = Vec::new();
    for item in lines.objects().skip(skip) {
        let (number, object) = item?;
        if fifo.len() + patterned.len() == ENTRIES_MAX {
            return Err(lines.error(number, &format!("at most {ENTRIES_MAX} entries"), "more"));
        }
        let raw: RawEntry = lines.decode(number, "a Harn --llm-mock entry", object)?;
        let entry = entry(lines, number, raw, strict)?;
        if entry.matcher.is_empty() {
            fifo.push(entry);
        } else {
            patterned.push(entry);
        }
    }
    fifo.extend(patterned);
    Ok(Fixture {
        source: lines.source.to_owned(),
        format,
        entries: fifo,
        usage_rule: UsageRule::Harn,
    })
}

fn entry(
    lines: &Lines<'_>,
    number: u64,
    mut raw: RawEntry,
    strict: bool,
) -> Result<Entry, FixtureError> {
    let text_pattern =
        match &raw.pattern {
            None => None,
            Some(pattern) => Some(TextPattern::glob(&star_only_glob(pattern)).map_err(
                |found| lines.error(number, "a `*` glob in \"match\"", found.to_string()),
            )?),
        };
    let mode = match (&text_pattern, raw.consume, raw.consume_match) {
        (_, Some(mode), _) => mode,
        (None, None, _) => Reuse::Once,
        (Some(_), None, Some(true)) => Reuse::Once,
        (Some(_), None, _) => Reuse::Sticky,
    };
    let scope = match raw.scope.as_deref() {
        None | Some("default") if strict => ScopeRule::Unscoped,
        None | Some("default") => ScopeRule::Any,
        Some("shared") => ScopeRule::Shared,
        Some(name) => ScopeRule::Named(name.to_owned()),
    };
    let id = raw.id.take();
    let outcome = match raw.error.take() {
        Some(error) => Outcome::Fail(failure(lines, number, error)?),
        None => Outcome::Respond(vec![Alternative {
            weight: 1,
            response: response(lines, number, raw)?,
        }]),
    };
    Ok(Entry {
        line: number,
        id,
        matcher: EntryMatch {
            text: text_pattern,
            ..EntryMatch::default()
        },
        mode,
        scope,
        outcome,
        latency: LatencyModel::default(),
    })
}

fn response(lines: &Lines<'_>, number: u64, raw: RawEntry) -> Result<ResponseSpec, FixtureError> {
    // Harn derives the text from the stream chunks when `text` is empty.
    let text = if raw.text.is_empty() {
        raw.stream_chunks.concat()
    } else {
        raw.text
    };
    let usage = match raw.usage {
        Some(u) => {
            if u.total_tokens
                .is_some_and(|t| Some(t) != u.input_tokens.checked_add(u.output_tokens))
            {
                let expected = "\"total_tokens\" equal to input_tokens + output_tokens";
                return Err(lines.error(number, expected, format!("{:?}", u.total_tokens)));
            }
            UsageSpec {
                input_tokens: Some(u.input_tokens),
                output_tokens: Some(u.output_tokens),
            }
        }
        None => UsageSpec {
            input_tokens: raw.input_tokens,
            output_tokens: raw.output_tokens,
        },
    };
    Ok(ResponseSpec {
        text,
        tool_calls: raw.tool_calls.into_iter().map(tool_call).collect(),
        stop_reason: raw.stop_reason,
        usage,
        model: Some(raw.model.unwrap_or_else(|| "mock".to_owned())),
        thinking: None,
    })
}

fn tool_call(raw: RawToolCall) -> ToolCallSpec {
    // OpenAI-style arguments are a JSON string; decode it when it is one.
    let arguments = match raw.arguments {
        serde_json::Value::String(s) => {
            serde_json::from_str(&s).unwrap_or(serde_json::Value::String(s))
        }
        other => other,
    };
    ToolCallSpec {
        id: raw.id,
        name: raw.name,
        arguments,
    }
}

fn failure(lines: &Lines<'_>, number: u64, raw: RawError) -> Result<HttpFailure, FixtureError> {
    let status = match (raw.status, raw.category.as_deref()) {
        (Some(status), _) => status,
        (None, Some("rate_limit")) => 429,
        (None, Some("overloaded")) => 529,
        (None, Some("timeout")) => 504,
        (None, Some("auth")) => 401,
        (None, Some("not_found")) => 404,
        (None, _) => 500,
    };
    if !(400..=599).contains(&status) {
        return Err(lines.error(
            number,
            "an HTTP error status (400–599)",
            format!("status {status}"),
        ));
    }
    let message = raw
        .message
        .or(raw.reason)
        .or(raw.kind)
        .or(raw.category)
        .unwrap_or_else(|| "mock error".to_owned());
    Ok(HttpFailure {
        status,
        message,
        retry_after_ms: raw.retry_after_ms,
    })
}

/// Returns a glob where only `*` is special, as in Harn.
fn star_only_glob(pattern: &str) -> String {
    let mut glob = pattern
        .split('*')
        .map(glob::Pattern::escape)
        .collect::<Vec<_>>()
        .join("*");
    // `**` is a path-component wildcard in the glob crate; one star means the same here.
    while glob.contains("**") {
        glob = glob.replace("**", "*");
    }
    glob
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn star_only_glob_escapes_everything_else() {
        // Goal: Harn patterns treat `?` and `[` literally and tolerate runs of stars.
        assert_eq!(star_only_glob("a?b*[c]**d"), "a[?]b*[[]c[]]*d");
        let pattern = TextPattern::glob(&star_only_glob("what? *")).unwrap();
        assert!(pattern.matches("what? now"));
        assert!(!pattern.matches("whatX now"));
    }
}
