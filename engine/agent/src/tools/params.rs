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
    pub(crate) fn check(&self, arguments: &Value) -> Result<(), String> {
        let empty = serde_json::Map::new();
        let object = match arguments {
            Value::Object(object) => object,
            // No arguments at all reads as an empty object, as clients send it.
            Value::Null => &empty,
            other => {
                return Err(format!(
                    "expected an object of arguments, found {}",
                    kind_of(other)
                ))
            }
        };
        if let Some(missing) = self.required.iter().find(|key| !object.contains_key(*key)) {
            return Err(format!("missing required argument {missing:?}"));
        }
        for (key, types) in &self.properties {
            let Some(value) = object.get(key) else {
                continue;
            };
            if !types.admits(value) {
                return Err(format!(
                    "argument {key:?} must be {}, found {}",
                    types.describe(),
                    kind_of(value)
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::Params;

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
        assert_eq!(params.check(&json!({"path": "a", "extra": 1})), Ok(()));
        assert_eq!(
            params.check(&json!({"path": "a", "ratio": 2, "free": [1]})),
            Ok(())
        );
        assert_eq!(params.check(&json!({"path": "a", "tags": null})), Ok(()));
        assert_eq!(
            params.check(&json!({})),
            Err("missing required argument \"path\"".to_string())
        );
        assert_eq!(
            params.check(&json!({"path": 3})),
            Err("argument \"path\" must be a string, found an integer".to_string())
        );
        assert_eq!(
            params.check(&json!({"path": "a", "count": 1.5})),
            Err("argument \"count\" must be an integer, found a number".to_string())
        );
        assert_eq!(
            params.check(&json!({"path": "a", "tags": "x"})),
            Err("argument \"tags\" must be an array or null, found a string".to_string())
        );
        assert_eq!(
            params.check(&json!(["a"])),
            Err("expected an object of arguments, found an array".to_string())
        );
    }

    #[test]
    fn a_schema_without_properties_takes_any_object() {
        // Goal: tools without parameters accept `{}` and no arguments at all.
        let params = Params::compile(&json!({"type": "object"}));
        assert_eq!(params.check(&json!({"anything": true})), Ok(()));
        assert_eq!(params.check(&serde_json::Value::Null), Ok(()));
    }
}
