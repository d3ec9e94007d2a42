//! Renders MessagePack payloads as JSON, for `simtape tape show | export` and diff reports.

/// A payload that is not one MessagePack value. Not fatal: the tape's hash chain still
/// holds; the renderer shows the error in place of the payload.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PayloadError {
    /// The bytes do not decode as MessagePack.
    #[error("{0}")]
    Decode(rmpv::decode::Error),
    /// Bytes remain after the one value.
    #[error("{bytes} bytes after the payload value")]
    Trailing {
        /// How many bytes remain.
        bytes: usize,
    },
}

/// Decodes one MessagePack value into JSON. Binary strings become `{"$bin": "<hex>"}`;
/// extension values `{"$ext": [type, "<hex>"]}`; map keys that are not strings are rendered
/// as their JSON text.
pub fn payload_to_json(bytes: &[u8]) -> Result<serde_json::Value, PayloadError> {
    if bytes.is_empty() {
        return Ok(serde_json::Value::Null);
    }
    let mut cursor = bytes;
    let value = rmpv::decode::read_value(&mut cursor).map_err(PayloadError::Decode)?;
    if !cursor.is_empty() {
        return Err(PayloadError::Trailing {
            bytes: cursor.len(),
        });
    }
    Ok(to_json(&value))
}

/// Converts an `rmpv` value to JSON (see [`payload_to_json`]).
pub fn to_json(value: &rmpv::Value) -> serde_json::Value {
    use serde_json::Value as J;
    match value {
        rmpv::Value::Nil => J::Null,
        rmpv::Value::Boolean(b) => J::Bool(*b),
        rmpv::Value::Integer(i) => match (i.as_u64(), i.as_i64()) {
            (Some(u), _) => J::from(u),
            (None, Some(s)) => J::from(s),
            (None, None) => J::Null,
        },
        rmpv::Value::F32(f) => J::from(f64::from(*f)),
        rmpv::Value::F64(f) => J::from(*f),
        rmpv::Value::String(s) => match s.as_str() {
            Some(text) => J::String(text.to_string()),
            None => serde_json::json!({ "$bin": super::hex_encode(s.as_bytes()) }),
        },
        rmpv::Value::Binary(b) => serde_json::json!({ "$bin": super::hex_encode(b) }),
        rmpv::Value::Array(items) => J::Array(items.iter().map(to_json).collect()),
        rmpv::Value::Map(pairs) => J::Object(
            pairs
                .iter()
                .map(|(k, v)| {
                    let key = match k.as_str() {
                        Some(text) => text.to_string(),
                        None => to_json(k).to_string(),
                    };
                    (key, to_json(v))
                })
                .collect(),
        ),
        rmpv::Value::Ext(kind, data) => {
            serde_json::json!({ "$ext": [kind, super::hex_encode(data)] })
        }
    }
}
