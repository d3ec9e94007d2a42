"""Records everything.json: server-everything asked for its client's roots and for a sampling,
through `simtape mcp record`, by a client that answers as simtape's built-in agent does.

Usage: python record.py -- SIMTAPE mcp record --cassette everything.json -- node .../dist/index.js

It lists the tools, calls get-roots-list (the server asks roots/list, logs what it got, then
answers) and trigger-sampling-request (the server asks sampling/createMessage). The answers
are the agent's: roots = the fs root as `file:///`, sampling = the model's answer as the
scenario's fixture gives it (model "sim-model", stop reason endTurn). get-roots-list goes first:
server-everything asks for the roots on its own 350 ms after the handshake unless a call has
asked already, and that request would belong to no call.
"""

import json
import sys

import anyio
from mcp import Client, StdioServerParameters, types

SAMPLED = "A haiku on replay: the tape runs, the model speaks, the same words again."


async def main() -> None:
    argv = sys.argv[sys.argv.index("--") + 1 :]
    server = StdioServerParameters(command=argv[0], args=argv[1:])

    async def sampling(context, params):
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text=SAMPLED),
            model="sim-model",
            stop_reason="endTurn",
        )

    async def roots(context):
        return types.ListRootsResult(roots=[types.Root(uri="file:///", name="fs")])

    async with Client(
        server, mode="legacy", sampling_callback=sampling, list_roots_callback=roots
    ) as client:
        await client.list_tools()
        calls = [
            ("get-roots-list", {}),
            ("trigger-sampling-request", {"prompt": "write a haiku about replay", "maxTokens": 60}),
        ]
        for name, arguments in calls:
            result = await client.call_tool(name, arguments)
            print(json.dumps([name, [getattr(b, "text", None) for b in result.content]]))


anyio.run(main)
