//! Checking a tool call's arguments against the tool's parameter schema, as harnesses do
//! before they run a tool: the arguments are an object, every required key is present, and
//! every key the schema types has a value of that type. The rest of JSON Schema (patterns,
//! ranges, nested shapes) is the tool's own business: a world server validates fully.
//!
//! A schema is compiled once into [`Params`], so a call checks without reading the schema.

use serde_json::Value;

/// The JSON types a property may have, as a bit set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Types(u8);

const STRING: u8 = 1;
const NUMBER: u8 = 2;
const INTEGER: u8 = 4;
const BOOLEAN: u8 = 8;
const OBJECT: u8 = 16;
const ARRAY: u8 = 32;
const NULL: u8 = 64;

impl Types {
    const ANY: Types = Types(u8::MAX);

    /// Reads a schema's `type` (a name or a list of names); anything else allows any type.
    fn of(schema: &Value) -> Types {
        match schema.get("type") {
            Some(Value::String(name)) => Types(bit(name)),
            Some(Value::Array(names)) => Types(
                names
                    .iter()
                    .filter_map(Value::as_str)
                    .map(bit)
                    .fold(0, |a, b| a | b),
            ),
            _ => Types::ANY,
        }
    }

    fn admits(self, value: &Value) -> bool {
        let bits = match value {
            Value::String(_) => STRING,
            // An integer is a number too.
            Value::Number(n) if n.is_i64() || n.is_u64() => INTEGER | NUMBER,
            Value::Number(_) => NUMBER,
            Value::Bool(_) => BOOLEAN,
            Value::Object(_) => OBJECT,
            Value::Array(_) => ARRAY,
            Value::Null => NULL,
        };
        self.0 & bits != 0
    }

    /// Names the types for an error message.
    fn describe(self) -> String {
        let names: Vec<&str> = [
            (STRING, "a string"),
            (INTEGER, "an integer"),
            (NUMBER, "a number"),
            (BOOLEAN, "a boolean"),
            (OBJECT, "an object"),
            (ARRAY, "an array"),
            (NULL, "null"),
        ]
        .iter()
        .filter(|(bit, _)| self.0 & bit != 0)
        .map(|(_, name)| *name)
        .collect();
        names.join(" or ")
    }
}

fn bit(name: &str) -> u8 {
    match name {
        "string" => STRING,
        "number" => NUMBER,
        "integer" => INTEGER,
        "boolean" => BOOLEAN,
        "object" => OBJECT,
        "array" => ARRAY,
        "null" => NULL,
        // An unknown type name constrains nothing we can check.
        _ => u8::MAX,
    }
}

/// Names a value's JSON type for an error message.
/// Why a tool call's arguments do not fit the tool's parameters. Not fatal: the model gets
/// the message as the call's error result and may correct the call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ArgumentError {
    /// The arguments are not an object.
    #[error("expected an object of arguments, found {found}")]
    NotAnObject {
        /// What they are instead (`an array`).
        found: &'static str,
    },
    /// A required argument is absent.
    #[error("missing required argument {key:?}")]
    Missing {
        /// The argument's name.
        key: String,
    },
    /// An argument has a type its schema does not admit.
    #[error("argument {key:?} must be {expected}, found {found}")]
    Type {
        /// The argument's name.
        key: String,
        /// The types admitted (`a string or null`).
        expected: String,
        /// What it is instead.
        found: &'static str,
    },
}

pub(crate) fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::String(_) => "a string",
        Value::Number(n) if n.is_i64() || n.is_u64() => "an integer",
        Value::Number(_) => "a number",
        Value::Bool(_) => "a boolean",
        Value::Object(_) => "an object",
        Value::Array(_) => "an array",
        Value::Null => "null",
    }
}

/// A compiled parameter schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Params {
    /// Every typed property, in schema order.
    properties: Vec<(String, Types)>,
    /// The required keys, in schema order.
    required: Vec<String>,
}

impl Params {
    /// Compiles a JSON-Schema-like `parameters` object; a schema without `properties` or
    /// `required` checks only that the arguments are an object.
    pub(crate) fn compile(schema: &Value) -> Params {
        let properties = schema
            .get("properties")
            .and_then(Value::as_object)
            .map(|properties| {
                properties
                    .iter()
                    .map(|(key, property)| (key.clone(), Types::of(property)))
                    .collect()
            })
            .unwrap_or_default();
        let required = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|keys| {
                keys.iter()
                    .filter_map(Value::as_str)
                    .map(String::from)
                    .collect()
            })
            .unwrap_or_default();
        Params {
            properties,
            required,
        }
    }

    /// Checks `arguments`; the error says what is wrong, for the model to correct.
    pub(crate) fn check(&self, arguments: &Value) -> Result<(), ArgumentError> {
        let empty = serde_json::Map::new();
        let object = match arguments {
            Value::Object(object) => object,
            // No arguments at all reads as an empty object, as clients send it.
            Value::Null => &empty,
            other => {
                return Err(ArgumentError::NotAnObject {
                    found: kind_of(other),
                })
            }
        };
        if let Some(missing) = self.required.iter().find(|key| !object.contains_key(*key)) {
            return Err(ArgumentError::Missing {
                key: missing.clone(),
            });
        }
        for (key, types) in &self.properties {
            let Some(value) = object.get(key) else {
                continue;
            };
            if !types.admits(value) {
                return Err(ArgumentError::Type {
                    key: key.clone(),
                    expected: types.describe(),
                    found: kind_of(value),
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::Params;

    /// Checks `arguments` and returns the message the model would see, if any.
    fn check(params: &Params, arguments: &serde_json::Value) -> Option<String> {
        params.check(arguments).err().map(|error| error.to_string())
    }

    #[test]
    fn required_keys_and_types_are_checked() {
        // Goal: each kind of mistake is named; extra keys and untyped properties pass.
        let params = Params::compile(&json!({
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "count": {"type": "integer"},
                "ratio": {"type": "number"},
                "tags": {"type": ["array", "null"]},
                "free": {}
            },
            "required": ["path"]
        }));
        assert_eq!(check(&params, &json!({"path": "a", "extra": 1})), None);
        assert_eq!(
            check(&params, &json!({"path": "a", "ratio": 2, "free": [1]})),
            None
        );
        assert_eq!(check(&params, &json!({"path": "a", "tags": null})), None);
        assert_eq!(
            check(&params, &json!({})),
            Some("missing required argument \"path\"".to_string())
        );
        assert_eq!(
            check(&params, &json!({"path": 3})),
            Some("argument \"path\" must be a string, found an integer".to_string())
        );
        assert_eq!(
            check(&params, &json!({"path": "a", "count": 1.5})),
            Some("argument \"count\" must be an integer, found a number".to_string())
        );
        assert_eq!(
            check(&params, &json!({"path": "a", "tags": "x"})),
            Some("argument \"tags\" must be an array or null, found a string".to_string())
        );
        assert_eq!(
            check(&params, &json!(["a"])),
            Some("expected an object of arguments, found an array".to_string())
        );
    }

    #[test]
    fn a_schema_without_properties_takes_any_object() {
        // Goal: tools without parameters accept `{}` and no arguments at all.
        let params = Params::compile(&json!({"type": "object"}));
        assert_eq!(check(&params, &json!({"anything": true})), None);
        assert_eq!(check(&params, &serde_json::Value::Null), None);
    }
}
