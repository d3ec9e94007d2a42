//! The paths of the MCP endpoints (`/mcp/NAME`), which the gateway routes by, the driver and
//! the adapters name, and `mcp_http` serves. A leaf: the modules that name these paths sit
//! on both sides of the gateway and must not import each other for them.

/// The path prefix of the MCP endpoints: `/mcp/NAME`.
pub const MCP_PATH_PREFIX: &str = "/mcp/";

/// Returns the server a path names (`/mcp/tickets` → `tickets`), or `None` for other paths.
///
/// ```
/// use simtape_serve::mcp_http::server_of;
/// assert_eq!(server_of("/mcp/tickets/"), Some("tickets"));
/// assert_eq!(server_of("/v1/messages"), None);
/// ```
pub fn server_of(path: &str) -> Option<&str> {
    if path == "/mcp" {
        return Some("");
    }
    Some(path.strip_prefix(MCP_PATH_PREFIX)?.trim_end_matches('/'))
}
