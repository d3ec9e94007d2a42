//! Request matching for replay: which recorded exchange answers a live request, and, when none
//! does, which recorded request came closest and where it first differs.
//!
//! Keys are `(method, params)` with params normalized by [`crate::era::matching_params`]
//! (no id, no progress token, no per-request envelope). When several recorded requests have
//! the same key, they are used in recorded order, and the last one answers every repeat after
//! that: a stateful server's answers then come back in the order they were recorded.

use serde_json::{json, Value};

use crate::limits::EXCERPT_CHARS_MAX;

/// Where two JSON values first differ.
#[derive(Debug, Clone, PartialEq)]
pub struct Difference {
    /// A JSON pointer to the first differing field (`""` for the whole value).
    pub pointer: String,
    /// The value on the left (recorded) side, if the field exists there.
    pub left: Option<Value>,
    /// The value on the right (live or candidate) side, if the field exists there.
    pub right: Option<Value>,
}

/// Returns the first place `left` and `right` differ, visiting object keys in sorted order
/// and array items by index; `None` when they are equal as JSON values.
///
/// ```
/// use serde_json::json;
/// use simtape_mcp::matching::first_difference;
/// let d = first_difference(&json!({"a": {"b": 1}}), &json!({"a": {"b": 2}})).unwrap();
/// assert_eq!(d.pointer, "/a/b");
/// ```
pub fn first_difference(left: &Value, right: &Value) -> Option<Difference> {
    // The workspace's one structural JSON diff (the oracle names a tape's fields with it).
    let change = simtape::json_diff::first_change(left, right)?;
    Some(Difference {
        pointer: change.pointer,
        left: change.a,
        right: change.b,
    })
}

/// Returns how many leaf fields differ between two values (a distance for "closest").
pub fn count_differences(left: &Value, right: &Value) -> usize {
    match (left, right) {
        _ if left == right => 0,
        (Value::Object(l), Value::Object(r)) => {
            let mut keys: Vec<&String> = l.keys().chain(r.keys()).collect();
            keys.sort();
            keys.dedup();
            keys.into_iter()
                .map(|k| match (l.get(k), r.get(k)) {
                    (Some(a), Some(b)) => count_differences(a, b),
                    _ => 1,
                })
                .sum()
        }
        (Value::Array(l), Value::Array(r)) => {
            let common: usize = l.iter().zip(r).map(|(a, b)| count_differences(a, b)).sum();
            common + l.len().abs_diff(r.len())
        }
        _ => 1,
    }
}

/// Escapes one JSON-pointer segment (RFC 6901).
pub fn escape(segment: &str) -> String {
    simtape::json_diff::escape(segment)
}

/// Returns a short, single-line rendering of a value for error messages.
pub fn excerpt(value: Option<&Value>) -> String {
    let Some(value) = value else {
        return "(absent)".into();
    };
    let text = value.to_string();
    if text.chars().count() <= EXCERPT_CHARS_MAX {
        return text;
    }
    let cut: String = text.chars().take(EXCERPT_CHARS_MAX).collect();
    format!("{cut}…")
}

/// The recorded request keys and which have been used.
#[derive(Debug, Clone)]
pub struct Matcher {
    keys: Vec<(String, Value)>,
    used: Vec<bool>,
}

/// Why a live request matched nothing.
#[derive(Debug, Clone, PartialEq)]
pub struct Miss {
    /// The live method.
    pub method: String,
    /// Whether any recorded request has this method.
    pub method_recorded: bool,
    /// The closest recorded request, if the cassette has any.
    pub closest: Option<Box<Closest>>,
}

/// The recorded request nearest to a live one.
#[derive(Debug, Clone, PartialEq)]
pub struct Closest {
    /// Its index among the matcher's keys (the exchange index).
    pub index: usize,
    /// Its method.
    pub method: String,
    /// The tool (or prompt) it names (`params.name`), when it names one.
    pub tool: Option<String>,
    /// Its normalized params.
    pub params: Value,
    /// Where it first differs from the live request (pointer rooted at the request, e.g.
    /// `/params/arguments/b`).
    pub difference: Difference,
}

impl Matcher {
    /// Returns a matcher over `(method, normalized params)` keys, in recorded order.
    pub fn new(keys: Vec<(String, Value)>) -> Matcher {
        let used = vec![false; keys.len()];
        Matcher { keys, used }
    }

    /// Finds the exchange index that answers a live request (params already normalized).
    pub fn find(&mut self, method: &str, params: &Value) -> Result<usize, Miss> {
        let matches: Vec<usize> = (0..self.keys.len())
            .filter(|&i| self.keys[i].0 == method && &self.keys[i].1 == params)
            .collect();
        let chosen = matches
            .iter()
            .copied()
            .find(|&i| !self.used[i])
            .or(matches.last().copied());
        match chosen {
            Some(index) => {
                self.used[index] = true;
                Ok(index)
            }
            None => Err(self.miss(method, params)),
        }
    }

    fn miss(&self, method: &str, params: &Value) -> Miss {
        let live = json!({"method": method, "params": params});
        let tool = tool_of(params);
        // The same method first, then the same tool: a call of another tool that happens to
        // differ in fewer leaves is not what the pipeline meant to ask.
        let closest = (0..self.keys.len())
            .min_by_key(|&i| {
                let (m, p) = &self.keys[i];
                (
                    m != method,
                    tool_of(p) != tool,
                    count_differences(p, params),
                    i,
                )
            })
            .map(|index| {
                let (m, p) = &self.keys[index];
                let recorded = json!({"method": m, "params": p});
                let difference = first_difference(&recorded, &live)
                    .expect("a recorded key equal to the live one would have matched");
                Box::new(Closest {
                    index,
                    method: m.clone(),
                    tool: tool_of(p).map(str::to_string),
                    params: p.clone(),
                    difference,
                })
            });
        Miss {
            method: method.into(),
            method_recorded: self.keys.iter().any(|(m, _)| m == method),
            closest,
        }
    }
}

impl Miss {
    /// Returns the error message naming the closest request and the first differing field.
    pub fn message(&self) -> String {
        let head = if self.method_recorded {
            format!("no recorded {} request matches", self.method)
        } else {
            format!("Method not found: {} is not in the cassette", self.method)
        };
        match &self.closest {
            Some(c) => format!(
                "{head}; closest recorded request is #{} {}{}, first difference at {}: recorded {}, got {}",
                c.index,
                c.method,
                c.tool.as_ref().map_or_else(String::new, |tool| format!(" {tool}")),
                c.difference.pointer,
                excerpt(c.difference.left.as_ref()),
                excerpt(c.difference.right.as_ref()),
            ),
            None => format!("{head}; the cassette has no requests"),
        }
    }

    /// Returns the error `data`: the closest request and the differing field, as JSON.
    pub fn data(&self) -> Value {
        match &self.closest {
            Some(c) => json!({
                "closest": {"index": c.index, "method": c.method, "params": c.params},
                "firstDifference": {
                    "pointer": c.difference.pointer,
                    "recorded": c.difference.left,
                    "requested": c.difference.right,
                },
            }),
            None => json!({"closest": null}),
        }
    }
}

/// Returns the tool or prompt a request's params name (`tools/call`, `prompts/get`).
fn tool_of(params: &Value) -> Option<&str> {
    params.get("name").and_then(Value::as_str)
}

/// Returns the client-initiated exchanges of `cassette` and a matcher over them, keyed by
/// method and era-neutral params: the one index `simtape mcp replay` and the in-simulation
/// actor both answer from, so they answer the same request the same way.
pub(crate) fn client_index(
    cassette: &crate::cassette::Cassette,
) -> (Vec<crate::cassette::Exchange>, Matcher) {
    let exchanges: Vec<crate::cassette::Exchange> = cassette
        .exchanges()
        .into_iter()
        .filter(|e| e.from == crate::cassette::Party::Client)
        .collect();
    let keys = exchanges
        .iter()
        .map(|e| {
            (
                e.method().to_string(),
                crate::era::matching_params(e.params()),
            )
        })
        .collect();
    (exchanges, Matcher::new(keys))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matcher() -> Matcher {
        Matcher::new(vec![
            ("tools/list".into(), json!({})),
            (
                "tools/call".into(),
                json!({"name": "get-sum", "arguments": {"a": 2, "b": 3}}),
            ),
            (
                "tools/call".into(),
                json!({"name": "echo", "arguments": {"message": "hi"}}),
            ),
            (
                "tools/call".into(),
                json!({"name": "echo", "arguments": {"message": "hi"}}),
            ),
        ])
    }

    #[test]
    fn repeats_use_recorded_order_then_stick_to_the_last() {
        // Goal: equal requests consume recorded answers in order, then repeat the last one.
        let mut m = matcher();
        let echo = json!({"name": "echo", "arguments": {"message": "hi"}});
        assert_eq!(m.find("tools/call", &echo), Ok(2));
        assert_eq!(m.find("tools/call", &echo), Ok(3));
        assert_eq!(m.find("tools/call", &echo), Ok(3));
        assert_eq!(m.find("tools/list", &json!({})), Ok(0));
    }

    #[test]
    fn miss_names_closest_request_and_first_differing_field() {
        // Goal: a near miss names the recorded request with the fewest differences and the
        // pointer of the first differing field.
        let mut m = matcher();
        let live = json!({"name": "get-sum", "arguments": {"a": 2, "b": 4}});
        let miss = m.find("tools/call", &live).unwrap_err();
        let closest = miss.closest.as_ref().unwrap();
        assert_eq!(closest.index, 1);
        assert_eq!(closest.difference.pointer, "/params/arguments/b");
        assert!(
            miss.message().contains("#1 tools/call get-sum,"),
            "{}",
            miss.message()
        );
        assert!(
            miss.message().contains("recorded 3, got 4"),
            "{}",
            miss.message()
        );
        let unknown = m.find("no/such", &json!({})).unwrap_err();
        assert!(!unknown.method_recorded);
        assert_eq!(unknown.closest.unwrap().difference.pointer, "/method");
    }

    #[test]
    fn miss_prefers_a_call_of_the_same_tool_and_names_it() {
        // Goal: a call of `echo` with other arguments is closer than a call of another tool
        // that differs in fewer leaves: the hint names the recorded `echo` call.
        let mut m = Matcher::new(vec![
            (
                "tools/call".into(),
                json!({"name": "ping", "arguments": {"message": "ho", "loud": true, "n": 2}}),
            ),
            (
                "tools/call".into(),
                json!({"name": "echo", "arguments": {"message": "hi", "loud": false, "n": 1}}),
            ),
        ]);
        let live = json!({"name": "echo", "arguments": {"message": "ho", "loud": true, "n": 2}});
        let miss = m.find("tools/call", &live).unwrap_err();
        let closest = miss.closest.as_ref().unwrap();
        assert_eq!(closest.index, 1);
        assert_eq!(closest.tool.as_deref(), Some("echo"));
        assert!(
            miss.message()
                .contains("#1 tools/call echo, first difference at /params/arguments/loud"),
            "{}",
            miss.message()
        );
        let other = json!({"name": "absent", "arguments": {}});
        let miss = m.find("tools/call", &other).unwrap_err();
        assert!(
            miss.message().contains("#0 tools/call ping,"),
            "{}",
            miss.message()
        );
    }

    #[test]
    fn first_difference_reports_missing_fields_and_array_lengths() {
        // Goal: absent keys and extra array items are differences with one side absent.
        let d = first_difference(&json!({"a": 1}), &json!({"a": 1, "b/c": 2})).unwrap();
        assert_eq!((d.pointer.as_str(), d.left), ("/b~1c", None));
        let d = first_difference(&json!([1]), &json!([1, 2])).unwrap();
        assert_eq!((d.pointer.as_str(), d.right), ("/1", Some(json!(2))));
        assert_eq!(
            first_difference(&json!({"x": [1, {"y": 2}]}), &json!({"x": [1, {"y": 2}]})),
            None
        );
    }
}
