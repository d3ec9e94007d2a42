//! The two eras of the MCP protocol, and the pure helpers that let one server speak both.
//!
//! * **Handshake era** (2025-11-25 and earlier): `initialize` → `notifications/initialized`,
//!   then requests without any protocol envelope; `ping` exists.
//! * **2026-07-28** (stateless): every request carries `_meta` keys
//!   `io.modelcontextprotocol/protocolVersion` and `…/clientCapabilities`; `server/discover`
//!   replaces the handshake; every result carries `resultType`; list results carry `ttlMs` and
//!   `cacheScope`; an unsupported version is error `-32022`.

use serde_json::{json, Map, Value};

use crate::jsonrpc::{INVALID_PARAMS, UNSUPPORTED_PROTOCOL_VERSION};

/// The protocol revisions that use the stateless per-request envelope.
pub const MODERN_VERSIONS: &[&str] = &["2026-07-28"];
/// The handshake-era revisions, newest first.
pub const HANDSHAKE_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];
/// The newest handshake-era revision, answered when a client asks for one we do not know.
pub const LATEST_HANDSHAKE_VERSION: &str = "2025-11-25";

/// The prefix of every spec-defined `_meta` key.
pub const META_PREFIX: &str = "io.modelcontextprotocol/";
/// The per-request protocol version key (2026-07-28).
pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// The per-request client capabilities key (2026-07-28).
pub const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// The server info key a 2026-07-28 server puts in each result's `_meta`.
pub const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
/// The progress token key inside a request's `_meta`.
pub const META_PROGRESS_TOKEN: &str = "progressToken";

/// Methods whose 2026-07-28 results must carry the caching hints `ttlMs` and `cacheScope`.
pub const CACHED_METHODS: &[&str] = &[
    "server/discover",
    "tools/list",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
    "resources/read",
];

/// Returns the 2026-07-28 protocol version a request names in `params._meta`, if any. A request
/// that names one is a modern request; one that does not belongs to the handshake era.
pub fn requested_modern_version(params: Option<&Value>) -> Option<&Value> {
    params?.get("_meta")?.get(META_PROTOCOL_VERSION)
}

/// A JSON-RPC error the envelope check produced: code, message, data.
pub type EnvelopeError = (i64, String, Option<Value>);

/// Checks a 2026-07-28 request envelope: the version must be one we serve (else `-32022` with
/// the supported list) and the client capabilities must be present (else `-32602`).
pub fn check_modern_envelope(params: Option<&Value>) -> Result<(), EnvelopeError> {
    let meta = params.and_then(|p| p.get("_meta"));
    let version = meta.and_then(|m| m.get(META_PROTOCOL_VERSION));
    let Some(version) = version else {
        return Err((
            INVALID_PARAMS,
            format!("params._meta must carry `{META_PROTOCOL_VERSION}`"),
            None,
        ));
    };
    if !version
        .as_str()
        .is_some_and(|v| MODERN_VERSIONS.contains(&v))
    {
        return Err((
            UNSUPPORTED_PROTOCOL_VERSION,
            "Unsupported protocol version".into(),
            Some(json!({"supported": MODERN_VERSIONS, "requested": version})),
        ));
    }
    if !meta
        .and_then(|m| m.get(META_CLIENT_CAPABILITIES))
        .is_some_and(Value::is_object)
    {
        return Err((
            INVALID_PARAMS,
            format!("params._meta must carry the object `{META_CLIENT_CAPABILITIES}`"),
            None,
        ));
    }
    Ok(())
}

/// Returns the params as compared for matching: absent params become `{}`, and `_meta` is
/// removed. `_meta` is per-request metadata, not what is asked: the progress token, the
/// 2026-07-28 envelope (`io.modelcontextprotocol/…`) and client keys such as Claude Code's
/// `claudecode/toolUseId` differ on every call. So one recorded request matches the same call
/// made in either era, by any client, with any id.
///
/// ```
/// use serde_json::json;
/// use simtape_mcp::era::matching_params;
/// let live = json!({"name": "t", "_meta": {"progressToken": 4,
///     "io.modelcontextprotocol/protocolVersion": "2026-07-28", "claudecode/toolUseId": "x"}});
/// assert_eq!(matching_params(Some(&live)), json!({"name": "t"}));
/// ```
pub fn matching_params(params: Option<&Value>) -> Value {
    let mut params = params.cloned().unwrap_or_else(|| Value::Object(Map::new()));
    if let Some(object) = params.as_object_mut() {
        object.remove("_meta");
    }
    params
}

/// Returns the progress token of a request, if it asked for progress.
pub fn progress_token(params: Option<&Value>) -> Option<&Value> {
    params?.get("_meta")?.get(META_PROGRESS_TOKEN)
}

/// Adds what a 2026-07-28 client requires to a result recorded from a handshake-era server:
/// `resultType: "complete"`, the caching hints on list methods, and the server info in
/// `_meta`. Keys the recording already has are kept as recorded.
pub fn modernize_result(method: &str, result: &mut Value, server_info: Option<&Value>) {
    let Some(object) = result.as_object_mut() else {
        return;
    };
    object
        .entry("resultType")
        .or_insert_with(|| json!("complete"));
    if CACHED_METHODS.contains(&method) {
        object.entry("ttlMs").or_insert_with(|| json!(0));
        object
            .entry("cacheScope")
            .or_insert_with(|| json!("private"));
    }
    if let Some(info) = server_info {
        let meta = object.entry("_meta").or_insert_with(|| json!({}));
        if let Some(meta) = meta.as_object_mut() {
            meta.entry(META_SERVER_INFO).or_insert_with(|| info.clone());
        }
    }
}

/// Chooses the version to answer a handshake-era `initialize` with: the requested one when it
/// is a handshake version no newer than the recorded server's, else the recorded one (the rule
/// of the 2025-11-25 lifecycle: echo a supported version, otherwise offer your own).
pub fn negotiate_handshake_version(requested: Option<&str>, recorded: &str) -> String {
    match requested {
        // ISO dates compare correctly as strings.
        Some(r) if HANDSHAKE_VERSIONS.contains(&r) && r <= recorded => r.to_string(),
        _ => recorded.to_string(),
    }
}

/// Builds a `server/discover` result from what a handshake-era `initialize` answered.
pub fn discover_from_initialize(initialize_result: &Value) -> Value {
    let mut result = json!({
        "resultType": "complete",
        "supportedVersions": MODERN_VERSIONS,
        "capabilities": initialize_result.get("capabilities").cloned().unwrap_or(json!({})),
        "ttlMs": 0,
        "cacheScope": "private",
    });
    if let Some(instructions) = initialize_result.get("instructions") {
        result["instructions"] = instructions.clone();
    }
    if let Some(info) = initialize_result.get("serverInfo") {
        result["_meta"] = json!({ META_SERVER_INFO: info });
    }
    result
}

/// Builds a handshake-era `initialize` result from a recorded `server/discover` result.
pub fn initialize_from_discover(discover_result: &Value, version: &str) -> Value {
    let mut result = json!({
        "protocolVersion": version,
        "capabilities": discover_result.get("capabilities").cloned().unwrap_or(json!({})),
        "serverInfo": discover_result
            .pointer(&format!("/_meta/{}", META_SERVER_INFO.replace('/', "~1")))
            .cloned()
            .unwrap_or(json!({"name": "simtape-mcp-replay", "version": env!("CARGO_PKG_VERSION")})),
    });
    if let Some(instructions) = discover_result.get("instructions") {
        result["instructions"] = instructions.clone();
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matching_params_ignore_all_of_meta() {
        // Goal: a modern request with envelope keys, a progress token and a client's own keys
        // matches the plain request; a legacy request without params matches `{}`.
        let modern = json!({"name": "echo", "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}, "progressToken": "p",
            "claudecode/toolUseId": "toolu_1"}});
        assert_eq!(matching_params(Some(&modern)), json!({"name": "echo"}));
        assert_eq!(matching_params(None), json!({}));
    }

    #[test]
    fn envelope_check_names_version_and_capability_problems() {
        // Goal: unsupported version is -32022 with the supported list; missing caps is -32602.
        let old = json!({"_meta": {META_PROTOCOL_VERSION: "1900-01-01",
            META_CLIENT_CAPABILITIES: {}}});
        let (code, _, data) = check_modern_envelope(Some(&old)).unwrap_err();
        assert_eq!(code, UNSUPPORTED_PROTOCOL_VERSION);
        assert_eq!(data.unwrap()["requested"], "1900-01-01");
        let no_caps = json!({"_meta": {META_PROTOCOL_VERSION: "2026-07-28"}});
        assert_eq!(
            check_modern_envelope(Some(&no_caps)).unwrap_err().0,
            INVALID_PARAMS
        );
    }

    #[test]
    fn handshake_version_is_echoed_or_replaced() {
        // Goal: a known older version is echoed; an unknown or newer one gets the recorded one.
        assert_eq!(
            negotiate_handshake_version(Some("2024-11-05"), "2025-11-25"),
            "2024-11-05"
        );
        assert_eq!(
            negotiate_handshake_version(Some("2099-01-01"), "2025-11-25"),
            "2025-11-25"
        );
        assert_eq!(
            negotiate_handshake_version(Some("2026-07-28"), "2025-11-25"),
            "2025-11-25"
        );
    }

    #[test]
    fn modernized_list_result_carries_type_and_cache_hints() {
        // Goal: a legacy tools/list result gains resultType, ttlMs, cacheScope and serverInfo.
        let mut result = json!({"tools": []});
        modernize_result("tools/list", &mut result, Some(&json!({"name": "s"})));
        assert_eq!(result["resultType"], "complete");
        assert_eq!(result["ttlMs"], 0);
        assert_eq!(result["cacheScope"], "private");
        assert_eq!(result["_meta"][META_SERVER_INFO]["name"], "s");
    }
}
