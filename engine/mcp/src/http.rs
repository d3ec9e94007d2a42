//! The rules of MCP's Streamable HTTP transport that do not depend on an HTTP library: header
//! names, what a client's `Accept` allows, how one message is framed as a server-sent event,
//! and the `Host`/`Origin` check against DNS rebinding. Both HTTP servers use them: the one
//! inside `simtape serve` (`/mcp/NAME`) and the one of `simtape mcp replay|world|record --http`.

use serde_json::Value;

/// The header that names a session (returned on `initialize`, sent back by the client).
pub const SESSION_HEADER: &str = "mcp-session-id";

/// What a client's `Accept` header allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Accepts {
    /// A JSON body (`application/json`, or any type).
    pub json: bool,
    /// A server-sent event stream (`text/event-stream`, or any type).
    pub events: bool,
}

/// Reads an `Accept` header; an absent one accepts everything.
///
/// ```
/// use simtape_mcp::http::accepts;
/// let both = accepts(Some("application/json, text/event-stream"));
/// assert!(both.json && both.events);
/// assert!(!accepts(Some("text/event-stream")).json);
/// ```
pub fn accepts(accept: Option<&str>) -> Accepts {
    let Some(accept) = accept else {
        return Accepts {
            json: true,
            events: true,
        };
    };
    let names = |kind: &str| {
        accept
            .split(',')
            .any(|item| item.trim().starts_with(kind) || item.trim().starts_with("*/*"))
    };
    Accepts {
        json: names("application/json"),
        events: names("text/event-stream"),
    }
}

/// Returns the JSON-RPC error for a POST body that is not JSON (sent with status 400).
pub fn body_parse_error(error: &serde_json::Error) -> Value {
    let message = format!("Parse error: {error}");
    crate::jsonrpc::error_response(&Value::Null, crate::jsonrpc::PARSE_ERROR, &message, None)
}

/// Frames one JSON-RPC message as a server-sent `message` event.
pub fn sse_event(message: &Value) -> String {
    sse_event_text(&message.to_string())
}

/// Frames one JSON text (a message or a batch) as a server-sent `message` event.
pub fn sse_event_text(json: &str) -> String {
    format!("event: message\ndata: {json}\n\n")
}

/// Returns why a request must be refused as a possible DNS-rebinding attack, or `None` when it
/// may be served. A server on loopback answers only requests whose `Host` names a loopback
/// host (`localhost`, `127.0.0.1`, `[::1]`, any port) and whose `Origin`, when there is one,
/// is such a host too: a page on another site that resolved its own name to 127.0.0.1 sends
/// its own name in both.
///
/// ```
/// use simtape_mcp::http::rebinding_refusal;
/// assert_eq!(rebinding_refusal(Some("127.0.0.1:8080"), None), None);
/// assert!(rebinding_refusal(Some("evil.example"), None).is_some());
/// assert!(rebinding_refusal(Some("localhost:1"), Some("http://evil.example")).is_some());
/// ```
pub fn rebinding_refusal(host: Option<&str>, origin: Option<&str>) -> Option<String> {
    let Some(host) = host else {
        return Some("the request has no Host header".into());
    };
    if !is_loopback_authority(host) {
        return Some(format!(
            "Host {host:?} is not a loopback host (refused against DNS rebinding)"
        ));
    }
    let origin = origin?;
    let authority = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"));
    match authority {
        Some(authority) if is_loopback_authority(authority.trim_end_matches('/')) => None,
        _ => Some(format!(
            "Origin {origin:?} is not a loopback origin (refused against DNS rebinding)"
        )),
    }
}

/// Returns true for `localhost`, `127.0.0.1` or `[::1]`, with or without a port.
fn is_loopback_authority(authority: &str) -> bool {
    let host = if let Some(rest) = authority.strip_prefix('[') {
        rest.split_once(']').map(|(host, _)| host).unwrap_or(rest)
    } else {
        authority.split(':').next().unwrap_or(authority)
    };
    matches!(
        host.to_ascii_lowercase().as_str(),
        "localhost" | "127.0.0.1" | "::1"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts_and_origins_pass_and_others_are_refused() {
        // Goal: every loopback spelling passes with and without a port; a foreign Host or
        // Origin, a missing Host and a non-HTTP origin are refused with a reason.
        for host in [
            "localhost",
            "LOCALHOST:3000",
            "127.0.0.1:9",
            "[::1]:80",
            "[::1]",
        ] {
            assert_eq!(rebinding_refusal(Some(host), None), None, "{host}");
        }
        assert_eq!(
            rebinding_refusal(Some("127.0.0.1:1"), Some("http://localhost:5173")),
            None
        );
        assert!(rebinding_refusal(None, None).is_some());
        assert!(rebinding_refusal(Some("127.0.0.1.evil.example"), None).is_some());
        assert!(rebinding_refusal(Some("localhost"), Some("null")).is_some());
        let refused = rebinding_refusal(Some("localhost"), Some("https://evil.example")).unwrap();
        assert!(refused.contains("evil.example"), "{refused}");
    }
}
