//! Volatile fields: the per-process noise in an agent's requests (session ids, the date, the
//! scratch directory and home it runs in) that would make two runs of one seed differ.
//!
//! The driver normalizes each request body before it enters the simulation, so fixture
//! matching and the tape see the normalized request; the raw body stays in the session log.
//! A rule is a JSON pointer (its value becomes `<volatile>`), a literal (every occurrence
//! becomes a placeholder: the agent's working directory becomes `<cwd>`), or a pattern.

use regex::Regex;
use serde_json::Value;

/// The placeholder a volatile JSON field becomes.
pub const VOLATILE: &str = "<volatile>";

/// The rules applied to every request body, in order: pointers, literals, patterns.
#[derive(Debug, Clone, Default)]
pub struct BodyNormalizer {
    pointers: Vec<String>,
    literals: Vec<(String, String)>,
    patterns: Vec<(Regex, String)>,
}

/// A rule that could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BodyRuleError {
    /// A pointer does not start with `/`.
    #[error("normalization pointer {0:?} is not a JSON pointer (it must start with '/')")]
    Pointer(String),
    /// A pattern is not a regular expression.
    #[error("normalization pattern {pattern:?}: {source}")]
    Pattern {
        /// The pattern.
        pattern: String,
        /// Why it does not compile.
        source: regex::Error,
    },
}

impl BodyNormalizer {
    /// The rules for an agent whose CLI is not known (`simtape serve -- CMD`, an SDK
    /// agent): every adapter's rules together (`adapter::rules`), UUIDs anywhere among them.
    pub fn agent_defaults() -> BodyNormalizer {
        crate::adapter::all_rules()
    }

    /// Returns rules made of built-in `pointers` and `patterns` (each a regular expression
    /// and its replacement), in that order.
    ///
    /// # Panics
    /// When a built-in rule is malformed (a test catches it).
    pub(crate) fn built_in(pointers: &[&str], patterns: &[(&str, &str)]) -> BodyNormalizer {
        let mut rules = BodyNormalizer::default();
        for pointer in pointers {
            rules
                .pointer(pointer)
                .expect("the built-in pointers are pointers");
        }
        for (pattern, replacement) in patterns {
            rules
                .pattern(pattern, replacement)
                .expect("the built-in patterns compile");
        }
        rules
    }

    /// Appends `other`'s rules after these.
    pub(crate) fn then(mut self, other: BodyNormalizer) -> BodyNormalizer {
        self.pointers.extend(other.pointers);
        self.patterns.extend(other.patterns);
        for (text, placeholder) in other.literals {
            self.literal(&text, &placeholder);
        }
        self
    }

    /// Adds a JSON pointer whose value becomes `<volatile>`.
    pub fn pointer(&mut self, pointer: &str) -> Result<&mut Self, BodyRuleError> {
        if !pointer.starts_with('/') {
            return Err(BodyRuleError::Pointer(pointer.into()));
        }
        self.pointers.push(pointer.into());
        Ok(self)
    }

    /// Replaces every occurrence of `text` (when not empty) with `placeholder`. Literals run
    /// longest first, so a directory inside another is replaced before its parent.
    pub fn literal(&mut self, text: &str, placeholder: &str) -> &mut Self {
        if !text.is_empty() {
            self.literals.push((text.into(), placeholder.into()));
            self.literals
                .sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(a.0.cmp(&b.0)));
        }
        self
    }

    /// Replaces every match of `pattern` with `replacement` (`$1` refers to groups).
    pub fn pattern(
        &mut self,
        pattern: &str,
        replacement: &str,
    ) -> Result<&mut Self, BodyRuleError> {
        let regex = Regex::new(pattern).map_err(|source| BodyRuleError::Pattern {
            pattern: pattern.into(),
            source,
        })?;
        self.patterns.push((regex, replacement.into()));
        Ok(self)
    }

    /// Adds a scenario's `[normalize]` rules (checked when the scenario loaded).
    pub fn with_scenario_rules(mut self, spec: &simtape_agent::NormalizeSpec) -> BodyNormalizer {
        for pointer in &spec.pointers {
            self.pointers.push(pointer.clone());
        }
        for (pattern, replacement) in &spec.patterns {
            let regex = Regex::new(pattern.as_str()).expect("checked when the scenario loaded");
            self.patterns.push((regex, replacement.clone()));
        }
        self
    }

    /// Adds the literals of one agent's places: its working directory as `<cwd>` (and as
    /// the name agents key per-project state by, `<cwd-slug>`), its `HOME` as `<home>`.
    pub fn for_agent(
        mut self,
        cwd: Option<&std::path::Path>,
        home: Option<&str>,
    ) -> BodyNormalizer {
        if let Some(cwd) = cwd {
            let cwd = cwd.display().to_string();
            // Agents also key per-project state by the directory spelled as a name
            // (Claude Code: `~/.claude/projects/-tmp-run-7/`).
            let slug: String = cwd
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
                .collect();
            self.literal(&slug, "<cwd-slug>");
            self.literal(&cwd, "<cwd>");
        }
        if let Some(home) = home {
            self.literal(home, "<home>");
        }
        self
    }

    /// Returns an answer with each literal's placeholder turned back into its text, so a
    /// fixture can name the agent's working directory as `<cwd>` (a tool call's absolute
    /// path) and the agent still gets its real directory. Answers are not on the tape.
    pub fn restore(&self, body: &str) -> String {
        let mut text = body.to_string();
        for (literal, placeholder) in &self.literals {
            if text.contains(placeholder.as_str()) {
                text = text.replace(placeholder.as_str(), literal);
            }
        }
        text
    }

    /// Returns `body` normalized. A body that is not JSON gets the text rules only.
    pub fn apply(&self, body: &str) -> String {
        let mut text = match serde_json::from_str::<Value>(body) {
            Ok(mut json) if !self.pointers.is_empty() => {
                for pointer in &self.pointers {
                    if let Some(value) = json.pointer_mut(pointer) {
                        *value = Value::String(VOLATILE.into());
                    }
                }
                json.to_string()
            }
            _ => body.to_string(),
        };
        for (literal, placeholder) in &self.literals {
            if text.contains(literal.as_str()) {
                text = text.replace(literal.as_str(), placeholder);
            }
        }
        for (regex, replacement) in &self.patterns {
            if let std::borrow::Cow::Owned(replaced) =
                regex.replace_all(&text, replacement.as_str())
            {
                text = replaced;
            }
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn volatile_fields_become_placeholders_and_the_rest_stays() {
        // Goal: the session id, the date, the working directory (before its parent, home)
        // and UUIDs are replaced, and Codex's volatile fields too; everything else in the
        // body is kept byte for byte.
        let mut rules = BodyNormalizer::agent_defaults();
        rules.literal("/tmp/home", "<home>");
        rules.literal("/tmp/home/run-7", "<cwd>");
        let body = r#"{"metadata":{"user_id":"{\"session\":\"x\"}"},"system":"Today's date is 2026-11-25. cwd /tmp/home/run-7, memory /tmp/home/.claude","id":"dc9c17ae-0a97-4e93-905f-ef778fea1c25","n":1}"#;
        let normalized: Value = serde_json::from_str(&rules.apply(body)).unwrap();
        let expected = serde_json::json!({
            "id": "<uuid>",
            "metadata": {"user_id": "<volatile>"},
            "n": 1,
            "system": "Today's date is <date>. cwd <cwd>, memory <home>/.claude",
        });
        assert_eq!(normalized, expected);
        // Codex: its metadata, environment context and command output.
        let codex = serde_json::json!({
            "client_metadata": {"x-codex-turn-metadata": "{\"turn_started_at_unix_ms\":1}"},
            "input": [
                {"content": "<environment_context>\n  <cwd>/tmp/home/run-7</cwd>\n  <current_date>2026-11-25</current_date>\n  <timezone>Europe/Paris</timezone>\n</environment_context>"},
                {"output": "Chunk ID: f0f91b\nWall time: 0.0012 seconds\nProcess exited with code 0"},
            ],
        });
        let normalized: Value = serde_json::from_str(&rules.apply(&codex.to_string())).unwrap();
        let expected = serde_json::json!({
            "client_metadata": "<volatile>",
            "input": [
                {"content": "<environment_context>\n  <cwd><cwd></cwd>\n  <current_date><date></current_date>\n  <timezone><zone></timezone>\n</environment_context>"},
                {"output": "Chunk ID: <chunk>\nWall time: <seconds> seconds\nProcess exited with code 0"},
            ],
        });
        assert_eq!(normalized, expected);
        assert_eq!(
            rules.restore(r#"{"path":"<cwd>/a.txt"}"#),
            r#"{"path":"/tmp/home/run-7/a.txt"}"#
        );
        assert!(rules.pointer("metadata").is_err());
        assert!(rules.pattern("(", "x").is_err());
    }
}
