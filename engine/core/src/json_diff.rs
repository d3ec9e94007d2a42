//! Where two JSON documents differ, field by field, named by JSON pointer (RFC 6901).
//!
//! The one structural JSON diff of the workspace: the oracle names the fields of two records'
//! bodies with it (`/model: "gpt-4.1-mini" → "gpt-4.1"`), and the MCP replay's "closest
//! recorded request" is its first change.
//!
//! Object members are visited in sorted key order (`serde_json`'s map is ordered by key here),
//! not in document order: two documents equal as JSON values, whatever order their writers
//! put the keys in, have no changes, and the changes of two documents come out in one order on
//! every machine. Array items are compared by index; items only one side has are changes with
//! the other side absent.

use serde_json::Value;

/// One field that differs: its pointer and its value on each side (`None`: absent there).
#[derive(Debug, Clone, PartialEq)]
pub struct JsonChange {
    /// The field's JSON pointer (`""` for the whole document).
    pub pointer: String,
    /// The value in the first document, if the field is there.
    pub a: Option<Value>,
    /// The value in the second document, if the field is there.
    pub b: Option<Value>,
}

/// The changes between two documents: the first `listed_max` in visiting order, and how many
/// there are in all.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct JsonChanges {
    /// The first changes, in visiting order.
    pub listed: Vec<JsonChange>,
    /// Every change, listed or not.
    pub total: u64,
}

/// Returns the changes from `a` to `b`: each differing leaf (or member or item only one side
/// has), the first `listed_max` of them kept.
///
/// ```
/// use serde_json::json;
/// use simtape::json_diff::changes;
/// let a = json!({"model": "gpt-4.1-mini", "messages": [{"content": "hi"}], "n": 1});
/// let b = json!({"model": "gpt-4.1", "messages": [{"content": "hi"}], "n": 2});
/// let found = changes(&a, &b, 1);
/// assert_eq!(found.total, 2);
/// assert_eq!(found.listed[0].pointer, "/model");
/// assert_eq!(found.listed[0].b, Some(json!("gpt-4.1")));
/// ```
pub fn changes(a: &Value, b: &Value, listed_max: usize) -> JsonChanges {
    let mut found = JsonChanges::default();
    walk(&mut String::new(), Some(a), Some(b), listed_max, &mut found);
    found
}

/// Returns the first change from `a` to `b`, or `None` when they are equal as JSON values.
///
/// ```
/// use serde_json::json;
/// use simtape::json_diff::first_change;
/// let change = first_change(&json!({"a": {"b~c/d": 1}}), &json!({"a": {"b~c/d": 2}})).unwrap();
/// assert_eq!(change.pointer, "/a/b~0c~1d");
/// ```
pub fn first_change(a: &Value, b: &Value) -> Option<JsonChange> {
    changes(a, b, 1).listed.into_iter().next()
}

/// Escapes one token for a JSON pointer: `~` as `~0`, `/` as `~1`.
pub fn escape(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

fn walk(
    pointer: &mut String,
    a: Option<&Value>,
    b: Option<&Value>,
    listed_max: usize,
    found: &mut JsonChanges,
) {
    if a == b {
        return;
    }
    let length = pointer.len();
    match (a, b) {
        (Some(Value::Object(x)), Some(Value::Object(y))) => {
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort();
            keys.dedup();
            for key in keys {
                pointer.push('/');
                pointer.push_str(&escape(key));
                walk(pointer, x.get(key), y.get(key), listed_max, found);
                pointer.truncate(length);
            }
        }
        (Some(Value::Array(x)), Some(Value::Array(y))) => {
            for i in 0..x.len().max(y.len()) {
                pointer.push('/');
                pointer.push_str(&i.to_string());
                walk(pointer, x.get(i), y.get(i), listed_max, found);
                pointer.truncate(length);
            }
        }
        _ => {
            found.total += 1;
            if found.listed.len() < listed_max {
                found.listed.push(JsonChange {
                    pointer: pointer.clone(),
                    a: a.cloned(),
                    b: b.cloned(),
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_differing_leaf_is_counted_in_key_order() {
        // Goal: changes come in sorted key order, items by index, and absent sides are None.
        let a = json!({"z": 1, "a": [1, 2], "m": {"k": "x"}});
        let b = json!({"z": 2, "a": [1, 3, 4], "m": {}});
        let found = changes(&a, &b, 10);
        let pointers: Vec<&str> = found.listed.iter().map(|c| c.pointer.as_str()).collect();
        assert_eq!(pointers, ["/a/1", "/a/2", "/m/k", "/z"]);
        assert_eq!(found.total, 4);
        assert_eq!(found.listed[1].a, None);
        assert_eq!(found.listed[2].b, None);
    }

    #[test]
    fn the_list_is_capped_but_the_total_is_not() {
        // Goal: past the cap, changes are only counted.
        let a = json!([1, 2, 3, 4]);
        let b = json!([5, 6, 7, 8]);
        let found = changes(&a, &b, 2);
        assert_eq!((found.listed.len(), found.total), (2, 4));
    }

    #[test]
    fn a_type_change_is_one_change_at_its_field() {
        // Goal: an object that became a string is one change, not one per member.
        let found = changes(&json!({"x": {"a": 1, "b": 2}}), &json!({"x": "s"}), 5);
        assert_eq!(found.total, 1);
        assert_eq!(found.listed[0].pointer, "/x");
        assert_eq!(first_change(&json!(1), &json!(1)), None);
        assert_eq!(first_change(&json!(1), &json!(2)).unwrap().pointer, "");
    }
}
