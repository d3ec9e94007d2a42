//! Tool effects: JSON-pointer operations on the world state.
//!
//! A tool's effects run in order on a copy of the state; the copy replaces the state only if
//! every operation succeeded, so a call that fails half-way (a missing argument, a path that
//! is not there) leaves the world as it was. Only an injected `partial_write` fault commits a
//! prefix on purpose.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::pointer::{tokens, NotAPointer};
use super::template::{render, render_path, Bindings, MissingBinding};

/// Why an operation of a tool's effect failed. Not fatal: the call answers a tool error and
/// the world keeps the state it had before the call.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum EffectError {
    /// A template names nothing bound.
    #[error(transparent)]
    Binding(#[from] MissingBinding),
    /// A rendered path is not a JSON pointer.
    #[error(transparent)]
    Pointer(#[from] NotAPointer),
    /// Nothing is at the path.
    #[error("not found: {path}")]
    NotFound {
        /// The rendered path.
        path: String,
    },
    /// An array index past the end.
    #[error("{path}: index {index} is out of range")]
    OutOfRange {
        /// The rendered path.
        path: String,
        /// The index.
        index: usize,
    },
    /// A path goes through a value that is neither an object nor an array.
    #[error("{path}: `{token}` is inside a value that is not an object or array")]
    Inside {
        /// The rendered path.
        path: String,
        /// The token that cannot be entered.
        token: String,
    },
    /// A token inside an array is not an index.
    #[error("{path}: `{token}` is not an array index")]
    NotAnIndex {
        /// The rendered path.
        path: String,
        /// The token.
        token: String,
    },
    /// The path is `""`.
    #[error("an effect cannot replace the whole state (path \"\")")]
    WholeState,
    /// The parent of the path is neither an object nor an array.
    #[error("{path}: the parent is not an object or array")]
    Parent {
        /// The rendered path.
        path: String,
    },
    /// `merge` with a value that is not an object.
    #[error("{path}: merge needs an object value")]
    MergeValue {
        /// The rendered path.
        path: String,
    },
    /// `merge` into something that is not an object.
    #[error("{path}: merge target is not an object")]
    MergeTarget {
        /// The rendered path.
        path: String,
    },
    /// `append` to something that is not an array.
    #[error("{path}: append target is not an array")]
    AppendTarget {
        /// The rendered path.
        path: String,
    },
    /// `add` or `subtract` with an amount that is not an integer.
    #[error("{path}: the amount must be an integer, got {amount}")]
    Amount {
        /// The rendered path.
        path: String,
        /// The amount given.
        amount: Value,
    },
    /// `add` or `subtract` on a value that is not an integer.
    #[error("{path}: not an integer")]
    NotAnInteger {
        /// The rendered path.
        path: String,
    },
    /// `add` or `subtract` past the `i64` range.
    #[error("{path}: integer overflow")]
    Overflow {
        /// The rendered path.
        path: String,
    },
}

impl EffectError {
    fn not_found(path: &str) -> EffectError {
        EffectError::NotFound {
            path: path.to_string(),
        }
    }
}

/// One operation of a tool's effect. `path` is a JSON-pointer template (`{{arg}}` allowed);
/// `value` is a value template.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
pub enum Operation {
    /// Binds the value at `path` to the name `as` (default `value`) for later templates and
    /// the result. Fails when nothing is there.
    Read {
        /// Where to read.
        path: String,
        /// The name the value is bound to.
        #[serde(default = "default_read_name", rename = "as")]
        name: String,
    },
    /// Puts `value` at `path`, creating missing parent objects. In an array, the token `-` or
    /// the array's length appends.
    Set {
        /// Where to write.
        path: String,
        /// What to write.
        value: Value,
    },
    /// Shallow-merges the object `value` into the object at `path` (created when missing).
    Merge {
        /// The object to merge into.
        path: String,
        /// The object whose keys are written.
        value: Value,
    },
    /// Pushes `value` onto the array at `path` (created when missing).
    Append {
        /// The array.
        path: String,
        /// The element.
        value: Value,
    },
    /// Removes what is at `path`. Fails when nothing is there.
    Delete {
        /// What to remove.
        path: String,
    },
    /// Adds the integer `value` to the integer at `path` (checked; no floats).
    Add {
        /// The integer to change.
        path: String,
        /// The integer to add.
        value: Value,
    },
    /// Subtracts the integer `value` from the integer at `path` (checked; no floats).
    Subtract {
        /// The integer to change.
        path: String,
        /// The integer to subtract.
        value: Value,
    },
}

fn default_read_name() -> String {
    "value".into()
}

impl Operation {
    /// Returns the path template of the operation.
    pub fn path(&self) -> &str {
        match self {
            Operation::Read { path, .. }
            | Operation::Set { path, .. }
            | Operation::Merge { path, .. }
            | Operation::Append { path, .. }
            | Operation::Delete { path }
            | Operation::Add { path, .. }
            | Operation::Subtract { path, .. } => path,
        }
    }

    /// Returns the value template, for operations that have one.
    pub fn value(&self) -> Option<&Value> {
        match self {
            Operation::Set { value, .. }
            | Operation::Merge { value, .. }
            | Operation::Append { value, .. }
            | Operation::Add { value, .. }
            | Operation::Subtract { value, .. } => Some(value),
            Operation::Read { .. } | Operation::Delete { .. } => None,
        }
    }
}

/// Applies the first `limit` operations to `state` in place and returns the values `read`
/// bound. On error, `state` holds the operations that succeeded before the failing one.
pub fn apply(
    state: &mut Value,
    operations: &[Operation],
    limit: usize,
    arguments: &Map<String, Value>,
    call: u64,
    tool_call: u64,
) -> Result<Map<String, Value>, EffectError> {
    let mut reads = Map::new();
    for operation in operations.iter().take(limit) {
        let bindings = Bindings {
            arguments,
            reads: &reads,
            call,
            tool_call,
        };
        let path = render_path(operation.path(), &bindings)?;
        let value = operation
            .value()
            .map(|v| render(v, &bindings))
            .transpose()?;
        match (operation, value) {
            (Operation::Read { name, .. }, _) => {
                let found = state
                    .pointer(&path)
                    .ok_or_else(|| EffectError::not_found(&path))?;
                reads.insert(name.clone(), found.clone());
            }
            (Operation::Set { .. }, Some(value)) => put(state, &path, value)?,
            (Operation::Merge { .. }, Some(value)) => merge(state, &path, value)?,
            (Operation::Append { .. }, Some(value)) => append(state, &path, value)?,
            (Operation::Delete { .. }, _) => delete(state, &path)?,
            (Operation::Add { .. }, Some(value)) => add(state, &path, &value, false)?,
            (Operation::Subtract { .. }, Some(value)) => add(state, &path, &value, true)?,
            (_, None) => unreachable!("every writing operation has a value template"),
        }
    }
    Ok(reads)
}

/// Returns the container at `parent` tokens, creating missing objects on the way.
fn container_mut<'a>(
    state: &'a mut Value,
    parents: &[String],
    path: &str,
) -> Result<&'a mut Value, EffectError> {
    let mut here = state;
    for token in parents {
        here = match here {
            Value::Object(object) => object
                .entry(token.clone())
                .or_insert_with(|| Value::Object(Map::new())),
            Value::Array(items) => {
                let index = array_index(token, items.len(), path)?;
                items
                    .get_mut(index)
                    .ok_or_else(|| EffectError::OutOfRange {
                        path: path.to_string(),
                        index,
                    })?
            }
            _ => {
                return Err(EffectError::Inside {
                    path: path.to_string(),
                    token: token.clone(),
                })
            }
        };
    }
    Ok(here)
}

fn array_index(token: &str, length: usize, path: &str) -> Result<usize, EffectError> {
    if token == "-" {
        return Ok(length);
    }
    token.parse::<usize>().map_err(|_| EffectError::NotAnIndex {
        path: path.to_string(),
        token: token.to_string(),
    })
}

fn split(path: &str) -> Result<(Vec<String>, String), EffectError> {
    let mut parts = tokens(path)?;
    let last = parts.pop().ok_or(EffectError::WholeState)?;
    Ok((parts, last))
}

fn put(state: &mut Value, path: &str, value: Value) -> Result<(), EffectError> {
    let (parents, last) = split(path)?;
    match container_mut(state, &parents, path)? {
        Value::Object(object) => {
            object.insert(last, value);
            Ok(())
        }
        Value::Array(items) => {
            let index = array_index(&last, items.len(), path)?;
            match index.cmp(&items.len()) {
                std::cmp::Ordering::Less => items[index] = value,
                std::cmp::Ordering::Equal => items.push(value),
                std::cmp::Ordering::Greater => {
                    return Err(EffectError::OutOfRange {
                        path: path.to_string(),
                        index,
                    })
                }
            }
            Ok(())
        }
        _ => Err(EffectError::Parent {
            path: path.to_string(),
        }),
    }
}

/// Returns the value at `path`, creating it with `empty` when missing.
fn slot<'a>(state: &'a mut Value, path: &str, empty: Value) -> Result<&'a mut Value, EffectError> {
    if state.pointer(path).is_none() {
        put(state, path, empty)?;
    }
    Ok(state.pointer_mut(path).expect("the slot was just created"))
}

fn merge(state: &mut Value, path: &str, value: Value) -> Result<(), EffectError> {
    let Value::Object(fields) = value else {
        return Err(EffectError::MergeValue {
            path: path.to_string(),
        });
    };
    match slot(state, path, Value::Object(Map::new()))? {
        Value::Object(object) => {
            object.extend(fields);
            Ok(())
        }
        _ => Err(EffectError::MergeTarget {
            path: path.to_string(),
        }),
    }
}

fn append(state: &mut Value, path: &str, value: Value) -> Result<(), EffectError> {
    match slot(state, path, Value::Array(Vec::new()))? {
        Value::Array(items) => {
            items.push(value);
            Ok(())
        }
        _ => Err(EffectError::AppendTarget {
            path: path.to_string(),
        }),
    }
}

fn delete(state: &mut Value, path: &str) -> Result<(), EffectError> {
    let (_, last) = split(path)?;
    let removed = match state.pointer_mut(&parent_pointer(path)) {
        Some(Value::Object(object)) => object.remove(&last).is_some(),
        Some(Value::Array(items)) => match last.parse::<usize>() {
            Ok(index) if index < items.len() => {
                items.remove(index);
                true
            }
            _ => false,
        },
        _ => false,
    };
    removed
        .then_some(())
        .ok_or_else(|| EffectError::not_found(path))
}

fn parent_pointer(path: &str) -> String {
    path.rfind('/')
        .map(|at| path[..at].to_string())
        .unwrap_or_default()
}

fn add(state: &mut Value, path: &str, delta: &Value, subtract: bool) -> Result<(), EffectError> {
    let delta = delta.as_i64().ok_or_else(|| EffectError::Amount {
        path: path.to_string(),
        amount: delta.clone(),
    })?;
    let target = state
        .pointer_mut(path)
        .ok_or_else(|| EffectError::not_found(path))?;
    let current = target.as_i64().ok_or_else(|| EffectError::NotAnInteger {
        path: path.to_string(),
    })?;
    let next = if subtract {
        current.checked_sub(delta)
    } else {
        current.checked_add(delta)
    };
    let next = next.ok_or_else(|| EffectError::Overflow {
        path: path.to_string(),
    })?;
    *target = Value::from(next);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ops(value: Value) -> Vec<Operation> {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn operations_edit_the_state_in_order() {
        // Goal: each of the seven operations does what docs/mcp-world.md says.
        let mut state = json!({"t": {"a": {"s": "open"}}, "log": [], "n": 10});
        let args = json!({"id": "a", "k": 3});
        let operations = ops(json!([
            {"op": "read", "path": "/t/{{id}}", "as": "before"},
            {"op": "set", "path": "/t/{{id}}/s", "value": "closed"},
            {"op": "merge", "path": "/t/{{id}}", "value": {"by": "me"}},
            {"op": "append", "path": "/log", "value": {"id": "{{id}}", "was": "{{before}}"}},
            {"op": "add", "path": "/n", "value": "{{k}}"},
            {"op": "subtract", "path": "/n", "value": 1},
            {"op": "set", "path": "/new/deep", "value": true},
            {"op": "delete", "path": "/new"}
        ]));
        let reads = apply(
            &mut state,
            &operations,
            usize::MAX,
            args.as_object().unwrap(),
            1,
            1,
        );
        assert_eq!(reads.unwrap()["before"], json!({"s": "open"}));
        assert_eq!(
            state,
            json!({"t": {"a": {"s": "closed", "by": "me"}},
                   "log": [{"id": "a", "was": {"s": "open"}}], "n": 12})
        );
    }

    #[test]
    fn failures_name_the_path() {
        // Goal: reading or deleting nothing, and arithmetic on a non-integer, are errors.
        let mut state = json!({"x": "text"});
        let args = Map::new();
        let read = ops(json!([{"op": "read", "path": "/missing"}]));
        assert_eq!(
            apply(&mut state, &read, 9, &args, 1, 1)
                .unwrap_err()
                .to_string(),
            "not found: /missing"
        );
        let delete = ops(json!([{"op": "delete", "path": "/gone"}]));
        assert!(apply(&mut state, &delete, 9, &args, 1, 1).is_err());
        let add = ops(json!([{"op": "add", "path": "/x", "value": 1}]));
        assert!(apply(&mut state, &add, 9, &args, 1, 1).is_err());
    }
}
