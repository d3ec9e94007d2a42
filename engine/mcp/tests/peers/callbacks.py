"""Drives an MCP server that asks its client for things (sampling, elicitation) with the
official Python SDK client, and prints every callback call and notification it saw as JSON.

Usage: python callbacks.py MODE CALLS -- SERVER ARGV...
  MODE   "legacy", "auto" or "2026-07-28" (the client's protocol mode)
  CALLS  a JSON list of [tool name, arguments] pairs to call
  SERVER a stdio server's command line, or one http:// URL (Streamable HTTP)

The sampling callback answers "sampled #N: PROMPT" (or "PREFIX #N: PROMPT" with the variable
CALLBACKS_SAMPLING_PREFIX) and the elicitation callback accepts with fixed content, so two
runs that see the same requests give the same answers. Output: the
protocol version, the callbacks in the order they were called (with the params they got),
the server's notifications (method and params) and each call as driver.py reports it.
"""

import json
import os
import sys

import anyio
from driver import call_tools
from mcp import Client, StdioServerParameters, types


async def main() -> None:
    mode, calls = sys.argv[1], json.loads(sys.argv[2])
    argv = sys.argv[sys.argv.index("--") + 1 :]
    if len(argv) == 1 and argv[0].startswith("http://"):
        server = argv[0]
    else:
        server = StdioServerParameters(command=argv[0], args=argv[1:])
    report = {"mode": mode, "callbacks": [], "notifications": [], "calls": []}

    async def sampling(context, params):
        prompt = " ".join(getattr(m.content, "text", "") for m in params.messages)
        report["callbacks"].append({"kind": "sampling", "params": params.model_dump(mode="json", exclude_none=True)})
        prefix = os.environ.get("CALLBACKS_SAMPLING_PREFIX", "sampled")
        text = f"{prefix} #{len(report['callbacks'])}: {prompt}"
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text=text), model="simtape-test"
        )

    async def elicitation(context, params):
        report["callbacks"].append({"kind": "elicitation", "params": params.model_dump(mode="json", exclude_none=True)})
        # Keys in sorted order: a cassette stores objects with sorted keys, and `verify` sends
        # the recorded answer to a server that prints it back verbatim.
        return types.ElicitResult(action="accept", content={"check": True, "name": "Ada Lovelace"})

    async def messages(message):
        if isinstance(message, Exception):
            report["notifications"].append({"error": str(message)})
            return
        dumped = message.model_dump(mode="json", exclude_none=True)
        report["notifications"].append({"method": dumped.get("method"), "params": dumped.get("params")})

    async with Client(
        server,
        mode=mode,
        sampling_callback=sampling,
        elicitation_callback=elicitation,
        message_handler=messages,
    ) as client:
        report["protocol_version"] = client.protocol_version
        report["calls"] = await call_tools(client, calls)
    print(json.dumps(report))


anyio.run(main)
