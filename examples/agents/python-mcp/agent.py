"""A ticket-tracker agent on the official OpenAI Python SDK (Chat Completions) whose tools come
from an MCP server over Streamable HTTP (the official `mcp` client).

It reads OPENAI_BASE_URL and OPENAI_API_KEY as the SDK does, and finds its MCP server in the
config file SIMTAPE_MCP_CONFIG names (Claude Code's `--mcp-config` shape; MCP_URL, when set,
names the server's URL instead), so it runs unchanged against real services or under
`simtape serve`. It offers the model every tool the server lists, runs the tool calls the
model asks for, hands back each result (or the JSON-RPC error, so the model can retry), and
stops at the model's answer. Exits 0 when the answer says the ticket is closed as fixed.
"""

import asyncio
import json
import os
import sys

from mcp import Client
from mcp.shared.exceptions import MCPError
from openai import AsyncOpenAI

TASK = "Assign ticket T-1 to ann, comment on what was fixed, and close it as fixed."
TURNS_MAX = 8


def mcp_url() -> str:
    if os.environ.get("MCP_URL"):
        return os.environ["MCP_URL"]
    with open(os.environ["SIMTAPE_MCP_CONFIG"]) as config:
        return json.load(config)["mcpServers"]["tickets"]["url"]


def as_openai_tool(tool) -> dict:
    return {
        "type": "function",
        "function": {"name": tool.name, "description": tool.description or "", "parameters": tool.input_schema},
    }


async def run_tool(mcp: Client, name: str, arguments: dict) -> str:
    try:
        result = await mcp.call_tool(name, arguments)
    except MCPError as error:
        return f"error {error.code}: {error.message}"
    texts = [block.text for block in result.content if getattr(block, "type", None) == "text"]
    return ("tool error: " if result.is_error else "") + "\n".join(texts)


async def main() -> int:
    model = AsyncOpenAI(max_retries=0)
    async with Client(mcp_url(), mode=os.environ.get("MCP_MODE", "auto")) as mcp:
        tools = [as_openai_tool(tool) for tool in (await mcp.list_tools()).tools]
        messages = [
            {"role": "system", "content": "You work the team's ticket tracker through its tools."},
            {"role": "user", "content": TASK},
        ]
        for _ in range(TURNS_MAX):
            reply = await model.chat.completions.create(model="simtape", messages=messages, tools=tools)
            message = reply.choices[0].message
            messages.append(message.model_dump(exclude_none=True))
            if not message.tool_calls:
                print(message.content)
                return 0 if "closed as fixed" in (message.content or "") else 1
            # One call after another, in the model's order: the server sees them in that order.
            for call in message.tool_calls:
                output = await run_tool(mcp, call.function.name, json.loads(call.function.arguments))
                messages.append({"role": "tool", "tool_call_id": call.id, "content": output})
    print(f"no answer after {TURNS_MAX} turns", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
