//! Placeholder: MCP cassettes and servers (see docs/mcp.md).
