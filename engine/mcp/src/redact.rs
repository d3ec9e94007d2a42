//! Secret redaction, applied to every message and the server command line before a cassette is
//! written (and to live requests before they are matched, so the two stay comparable).
//!
//! The policy (also in docs/mcp.md):
//! 1. The value of every environment variable named with `--redact-env NAME` is replaced,
//!    wherever it appears inside a string, by `[REDACTED:NAME]`. Values shorter than
//!    [`ENV_VALUE_CHARS_MIN`] are skipped, since replacing `1` or `on` everywhere would wreck
//!    the recording without protecting anything.
//! 2. Strings whose object key names a credential (`api_key`, `apiKey`, `authorization`,
//!    `password`, `secret`, `token`, `access_token`, … compared without case, `-` or `_`)
//!    become `[REDACTED]`.
//! 3. Inside any string, `Bearer <token>` becomes `Bearer [REDACTED]`, and well-known key
//!    shapes (`sk-…`, `ghp_…`, `github_pat_…`, `xoxb-…`, `AKIA…`, `AIza…`, `glpat-…`, each
//!    followed by at least [`KEY_BODY_CHARS_MIN`] key characters) become `[REDACTED]`.

use serde_json::Value;

/// The placeholder for a redacted secret.
pub const PLACEHOLDER: &str = "[REDACTED]";
/// Environment values shorter than this are not redacted (see the module docs).
pub const ENV_VALUE_CHARS_MIN: usize = 4;
/// How many key characters must follow a known key prefix for it to count as a key.
pub const KEY_BODY_CHARS_MIN: usize = 16;
/// How many token characters must follow `Bearer ` for it to count as a token.
pub const BEARER_CHARS_MIN: usize = 8;

const SECRET_KEYS: &[&str] = &[
    "apikey",
    "xapikey",
    "authorization",
    "proxyauthorization",
    "password",
    "passwd",
    "secret",
    "clientsecret",
    "token",
    "accesstoken",
    "refreshtoken",
    "idtoken",
    "bearertoken",
    "authtoken",
    "privatekey",
    "sessiontoken",
];

const KEY_PREFIXES: &[&str] = &[
    "sk-",
    "ghp_",
    "gho_",
    "ghs_",
    "ghu_",
    "github_pat_",
    "xoxb-",
    "xoxp-",
    "AKIA",
    "AIza",
    "glpat-",
];

/// Redacts secrets from JSON values and strings.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    /// (variable name, its value), longest value first so overlapping values redact fully.
    env: Vec<(String, String)>,
}

impl Redactor {
    /// Returns a redactor for these (name, value) pairs of environment variables.
    ///
    /// ```
    /// use simtape_mcp::Redactor;
    /// let r = Redactor::new(vec![("MY_KEY".into(), "hunter22".into())]);
    /// assert_eq!(r.redact_text("pw=hunter22"), "pw=[REDACTED:MY_KEY]");
    /// ```
    pub fn new(env: Vec<(String, String)>) -> Redactor {
        let mut env: Vec<_> = env
            .into_iter()
            .filter(|(_, value)| value.chars().count() >= ENV_VALUE_CHARS_MIN)
            .collect();
        env.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then_with(|| a.0.cmp(&b.0)));
        Redactor { env }
    }

    /// Redacts a JSON value in place.
    pub fn redact_value(&self, value: &mut Value) {
        match value {
            Value::String(text) => *text = self.redact_text(text),
            Value::Array(items) => items.iter_mut().for_each(|item| self.redact_value(item)),
            Value::Object(object) => {
                for (key, item) in object.iter_mut() {
                    if item.is_string() && is_secret_key(key) {
                        *item = Value::String(PLACEHOLDER.into());
                    } else {
                        self.redact_value(item);
                    }
                }
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }

    /// Returns `text` with every secret replaced.
    pub fn redact_text(&self, text: &str) -> String {
        let mut text = text.to_string();
        for (name, value) in &self.env {
            if text.contains(value.as_str()) {
                text = text.replace(value.as_str(), &format!("[REDACTED:{name}]"));
            }
        }
        redact_patterns(&text)
    }
}

fn is_secret_key(key: &str) -> bool {
    let normalized: String = key
        .chars()
        .filter(|c| *c != '-' && *c != '_')
        .flat_map(char::to_lowercase)
        .collect();
    SECRET_KEYS.contains(&normalized.as_str())
}

fn is_key_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '-' || c == '_'
}

fn is_bearer_char(c: char) -> bool {
    is_key_char(c) || matches!(c, '.' | '~' | '+' | '/' | '=')
}

/// Returns how many bytes at the start of `text` satisfy `accept`.
fn run_length(text: &str, accept: fn(char) -> bool) -> usize {
    text.char_indices()
        .find(|(_, c)| !accept(*c))
        .map_or(text.len(), |(i, _)| i)
}

fn redact_patterns(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let mut previous: Option<char> = None;
    while let Some(c) = rest.chars().next() {
        let at_boundary = !previous.is_some_and(is_key_char);
        if at_boundary {
            if let Some(skip) = secret_at(rest) {
                out.push_str(skip.1);
                rest = &rest[skip.0..];
                previous = Some(']');
                continue;
            }
        }
        out.push(c);
        previous = Some(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// If a secret starts at the beginning of `text`, returns (its length, its replacement).
fn secret_at(text: &str) -> Option<(usize, &'static str)> {
    for bearer in ["Bearer ", "bearer "] {
        if let Some(body) = text.strip_prefix(bearer) {
            let length = run_length(body, is_bearer_char);
            if length >= BEARER_CHARS_MIN {
                return Some((bearer.len() + length, "Bearer [REDACTED]"));
            }
        }
    }
    for prefix in KEY_PREFIXES {
        if let Some(body) = text.strip_prefix(prefix) {
            let length = run_length(body, is_key_char);
            if length >= KEY_BODY_CHARS_MIN {
                return Some((prefix.len() + length, PLACEHOLDER));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn redacts_keys_tokens_named_fields_and_env_values() {
        // Goal: each rule of the policy fires, and ordinary text (and progressToken) survives.
        let redactor = Redactor::new(vec![
            ("DB_PASS".into(), "correct-horse".into()),
            ("SHORT".into(), "on".into()),
        ]);
        let mut value = json!({
            "headers": {"Authorization": "Bearer abc.def-123456789", "X-Api-Key": "k"},
            "text": "key sk-proj-ABCDEFGHIJKLMNOPQRST and ghp_0123456789abcdef0123 end",
            "dsn": "postgres://u:correct-horse@db/on",
            "_meta": {"progressToken": "tok-9"},
            "note": "ask-later is not a key; Bearer x is too short; turned on",
        });
        redactor.redact_value(&mut value);
        assert_eq!(value["headers"]["Authorization"], "[REDACTED]");
        assert_eq!(value["headers"]["X-Api-Key"], "[REDACTED]");
        assert_eq!(value["text"], "key [REDACTED] and [REDACTED] end");
        assert_eq!(value["dsn"], "postgres://u:[REDACTED:DB_PASS]@db/on");
        assert_eq!(value["_meta"]["progressToken"], "tok-9");
        assert_eq!(
            value["note"],
            "ask-later is not a key; Bearer x is too short; turned on"
        );
        assert_eq!(
            redactor.redact_text("curl -H 'authorization: Bearer eyJhbGciOi.x.y'"),
            "curl -H 'authorization: Bearer [REDACTED]'"
        );
    }

    #[test]
    fn key_prefix_inside_a_word_is_not_a_key() {
        // Goal: `task-…` or `risk-…` do not trigger the `sk-` rule (word boundary required).
        let text = "task-0123456789abcdefghij";
        assert_eq!(Redactor::default().redact_text(text), text);
    }
}
