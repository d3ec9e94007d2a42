//! What an entry's `match` block tests, and the test itself.
//!
//! Every condition present must hold; an empty block matches every request. Text patterns are
//! either a substring (`contains`) or a glob (`glob`: `*` any run, `?` one character, `[…]` a
//! class; `*` crosses newlines and `/`), always over the whole target text.

use super::request::{ChatRequest, MatchText};

/// A substring or a glob over one text.
#[derive(Debug, Clone, PartialEq)]
pub enum TextPattern {
    /// The text contains this substring.
    Contains(String),
    /// The whole text matches this glob.
    Glob(glob::Pattern),
}

/// A glob that does not compile. Not fatal to a run: it is reported when the fixture loads.
#[derive(Debug, thiserror::Error)]
#[error("an invalid glob {pattern:?} ({source})")]
pub struct GlobError {
    /// The glob as written.
    pub pattern: String,
    /// What the glob compiler found.
    pub source: glob::PatternError,
}

impl TextPattern {
    /// Compiles a glob.
    pub fn glob(pattern: &str) -> Result<TextPattern, GlobError> {
        glob::Pattern::new(pattern)
            .map(TextPattern::Glob)
            .map_err(|source| GlobError {
                pattern: pattern.to_string(),
                source,
            })
    }

    /// Returns whether `text` matches.
    pub fn matches(&self, text: &str) -> bool {
        match self {
            TextPattern::Contains(needle) => text.contains(needle.as_str()),
            // Message texts are not paths: `*` must cross `/` and leading dots are ordinary.
            TextPattern::Glob(pattern) => pattern.matches_with(
                text,
                glob::MatchOptions {
                    case_sensitive: true,
                    require_literal_separator: false,
                    require_literal_leading_dot: false,
                },
            ),
        }
    }
}

/// The conditions of one entry.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EntryMatch {
    /// Over the match text: every non-system message's content, joined by `\n`.
    pub text: Option<TextPattern>,
    /// Over the last message's content.
    pub last_message: Option<TextPattern>,
    /// Over the last tool-result message's content (fails when there is none).
    pub last_tool_result: Option<TextPattern>,
    /// Over the model name.
    pub model: Option<TextPattern>,
    /// Each of these tool names is offered.
    pub tools: Vec<String>,
    /// The call is the nth model call of the run (1-based).
    pub turn: Option<u64>,
    /// The call is the nth model call in the request's scope (1-based; unscoped calls count
    /// together).
    pub scope_turn: Option<u64>,
}

/// The call counters a match can test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Turns {
    /// Calls of the run so far, this one included.
    pub run: u64,
    /// Calls in this request's scope so far, this one included.
    pub scope: u64,
}

impl EntryMatch {
    /// Returns whether every condition holds for `request`. The cheap conditions (turns,
    /// model, tools) are tested first, so the match text is joined only when they hold.
    pub fn matches(&self, request: &ChatRequest, match_text: &MatchText<'_>, turns: Turns) -> bool {
        self.turn.is_none_or(|n| n == turns.run)
            && self.scope_turn.is_none_or(|n| n == turns.scope)
            && self
                .model
                .as_ref()
                .is_none_or(|p| p.matches(&request.model))
            && self
                .tools
                .iter()
                .all(|name| request.tools.iter().any(|t| &t.name == name))
            && self
                .last_message
                .as_ref()
                .is_none_or(|p| request.last_message().is_some_and(|t| p.matches(t)))
            && self
                .last_tool_result
                .as_ref()
                .is_none_or(|p| request.last_tool_result().is_some_and(|t| p.matches(t)))
            && self
                .text
                .as_ref()
                .is_none_or(|p| p.matches(match_text.get()))
    }

    /// Returns whether the block has no condition at all (Harn's FIFO entries).
    pub fn is_empty(&self) -> bool {
        *self == EntryMatch::default()
    }
}
