//! `{{name}}` substitution. Names are looked up first in the call's arguments, then in the
//! values earlier `read` operations bound, then among the built-ins `$call` (the 1-based
//! number of this `tools/call` in the session) and `$tool_call` (its number among calls to
//! the same tool).
//!
//! Two forms, so types survive: a string that is exactly `"{{name}}"` becomes the named value
//! itself (a number stays a number, an object an object); a placeholder inside a longer string
//! is replaced by the value's text (strings without quotes, anything else as compact JSON).
//! In paths every substituted text is escaped as a JSON-pointer token, so an argument cannot
//! reach outside the segment it fills.

use serde_json::{Map, Value};

use super::pointer::escape;

/// What placeholders can name during one call.
#[derive(Debug, Clone, Copy)]
pub struct Bindings<'a> {
    /// The call's arguments.
    pub arguments: &'a Map<String, Value>,
    /// Values bound by `read` operations so far.
    pub reads: &'a Map<String, Value>,
    /// The 1-based number of this `tools/call` in the session.
    pub call: u64,
    /// The 1-based number of this call among calls to the same tool.
    pub tool_call: u64,
}

/// A placeholder that names nothing bound. Not fatal: the call answers a tool error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("missing argument `{name}`")]
pub struct MissingBinding {
    /// The placeholder's name.
    pub name: String,
}

impl Bindings<'_> {
    fn lookup(&self, name: &str) -> Result<Value, MissingBinding> {
        if let Some(value) = self.arguments.get(name).or_else(|| self.reads.get(name)) {
            return Ok(value.clone());
        }
        match name {
            "$call" => Ok(Value::from(self.call)),
            "$tool_call" => Ok(Value::from(self.tool_call)),
            _ => Err(MissingBinding {
                name: name.to_string(),
            }),
        }
    }
}

/// Renders a value template: every string in it is substituted (object keys are kept).
pub fn render(template: &Value, bindings: &Bindings<'_>) -> Result<Value, MissingBinding> {
    Ok(match template {
        Value::String(text) => match whole_placeholder(text) {
            Some(name) => bindings.lookup(name)?,
            None => Value::String(interpolate(text, bindings, false)?),
        },
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|item| render(item, bindings))
                .collect::<Result<_, _>>()?,
        ),
        Value::Object(object) => {
            let mut out = Map::new();
            for (key, value) in object {
                out.insert(key.clone(), render(value, bindings)?);
            }
            Value::Object(out)
        }
        other => other.clone(),
    })
}

/// Renders a JSON-pointer template, escaping each substituted text as a pointer token.
pub fn render_path(template: &str, bindings: &Bindings<'_>) -> Result<String, MissingBinding> {
    interpolate(template, bindings, true)
}

/// Returns the placeholder names a template string uses, for spec checks.
pub fn placeholders(text: &str) -> Vec<&str> {
    let mut names = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        let Some(end) = rest[start + 2..].find("}}") else {
            break;
        };
        names.push(rest[start + 2..start + 2 + end].trim());
        rest = &rest[start + 2 + end + 2..];
    }
    names
}

fn whole_placeholder(text: &str) -> Option<&str> {
    let inner = text.strip_prefix("{{")?.strip_suffix("}}")?;
    (!inner.contains("{{") && !inner.contains("}}")).then(|| inner.trim())
}

fn interpolate(
    text: &str,
    bindings: &Bindings<'_>,
    as_path: bool,
) -> Result<String, MissingBinding> {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        let Some(end) = rest[start + 2..].find("}}") else {
            break;
        };
        out.push_str(&rest[..start]);
        let name = rest[start + 2..start + 2 + end].trim();
        let value = bindings.lookup(name)?;
        let text = match value {
            Value::String(s) => s,
            other => other.to_string(),
        };
        out.push_str(&if as_path { escape(&text) } else { text });
        rest = &rest[start + 2 + end + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn whole_placeholders_keep_types_and_paths_are_escaped() {
        // Goal: "{{n}}" keeps a number a number; a `/` in an argument cannot split a path.
        let arguments = json!({"n": 5, "id": "a/b", "who": "ann"});
        let reads = Map::new();
        let b = Bindings {
            arguments: arguments.as_object().unwrap(),
            reads: &reads,
            call: 3,
            tool_call: 1,
        };
        let rendered = render(
            &json!({"amount": "{{n}}", "note": "by {{who}} #{{$call}}"}),
            &b,
        );
        assert_eq!(rendered.unwrap(), json!({"amount": 5, "note": "by ann #3"}));
        assert_eq!(render_path("/t/{{id}}/x", &b).unwrap(), "/t/a~1b/x");
        assert_eq!(
            render_path("/t/{{nope}}", &b).unwrap_err().to_string(),
            "missing argument `nope`"
        );
    }
}
