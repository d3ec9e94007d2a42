"""Drives an MCP server with the official Python SDK client and prints what it saw as JSON.

Usage: python driver.py MODE CALLS -- SERVER ARGV...
  MODE   "legacy", "auto" or "2026-07-28" (the client's protocol mode)
  CALLS  a JSON list of [tool name, arguments] pairs to call after listing the tools
  SERVER a stdio server's command line, or one http:// URL (Streamable HTTP). An argument
         `{mcp_url:NAME}` becomes the URL of server NAME in the MCP config file that
         SIMTAPE_MCP_CONFIG names (as `simtape serve` hands it to its agent).

Output (one JSON object on stdout): the negotiated version, the tools (name, whether they
have an output schema, annotations) and one entry per call: the result (isError, structured
content, text) or the protocol error (code, message) the client raised.
"""

import json
import os
import re
import sys

import anyio
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError


def with_mcp_urls(arg: str) -> str:
    def url(match: re.Match) -> str:
        with open(os.environ["SIMTAPE_MCP_CONFIG"]) as config:
            return json.load(config)["mcpServers"][match.group(1)]["url"]

    return re.sub(r"\{mcp_url:([^}]+)\}", url, arg)


async def main() -> None:
    mode, calls = sys.argv[1], json.loads(sys.argv[2])
    argv = [with_mcp_urls(arg) for arg in sys.argv[sys.argv.index("--") + 1 :]]
    if len(argv) == 1 and argv[0].startswith("http://"):
        server = argv[0]
    else:
        server = StdioServerParameters(command=argv[0], args=argv[1:])
    report = {"mode": mode, "tools": [], "calls": []}
    async with Client(server, mode=mode) as client:
        report["protocol_version"] = client.protocol_version
        info = client.server_info
        report["server_name"] = info.name if info else None
        listed = await client.list_tools()
        for tool in listed.tools:
            annotations = tool.annotations.model_dump(exclude_none=True) if tool.annotations else None
            report["tools"].append(
                {"name": tool.name, "output_schema": tool.output_schema is not None, "annotations": annotations}
            )
        report["calls"] = await call_tools(client, calls)
    print(json.dumps(report))


async def call_tools(client: Client, calls: list) -> list:
    """Calls each [name, arguments] pair; returns per call the result or the protocol error."""
    seen = []
    for name, arguments in calls:
        try:
            result = await client.call_tool(name, arguments)
        except MCPError as error:
            seen.append({"name": name, "error": {"code": error.code, "message": error.message}})
            continue
        texts = [block.text for block in result.content if getattr(block, "type", None) == "text"]
        seen.append(
            {"name": name, "is_error": bool(result.is_error), "structured": result.structured_content, "text": texts}
        )
    return seen


if __name__ == "__main__":
    anyio.run(main)
