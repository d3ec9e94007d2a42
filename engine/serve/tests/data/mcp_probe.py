"""Sends the MCP endpoint test's requests with the standard library and writes what came back
(status, content type, session id, body) as JSON to the file named by PROBE_OUT."""

import json
import os
import urllib.error
import urllib.request

BASE = os.environ["SIMTAPE_SERVE_URL"]
BOTH = "application/json, text/event-stream"
MODERN = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
          "io.modelcontextprotocol/clientCapabilities": {}}


def call(method, path, message=None, accept=BOTH, raw=None):
    body = raw if raw is not None else (json.dumps(message).encode() if message is not None else None)
    request = urllib.request.Request(BASE + path, data=body, method=method,
                                     headers={"content-type": "application/json", "accept": accept})
    try:
        with urllib.request.urlopen(request) as response:
            status, headers, text = response.status, response.headers, response.read().decode()
    except urllib.error.HTTPError as error:
        status, headers, text = error.code, error.headers, error.read().decode()
    return {"status": status, "type": headers.get("content-type"), "session": headers.get("mcp-session-id"),
            "body": text}


def rpc(id, method, params=None):
    message = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        message["params"] = params
    return message


INIT = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "probe", "version": "1"}}
results = {
    "unknown_post": call("POST", "/mcp/nope", rpc(1, "tools/list")),
    "unknown_get": call("GET", "/mcp/nope"),
    "initialize": call("POST", "/mcp/tickets", rpc(1, "initialize", INIT)),
    "initialized": call("POST", "/mcp/tickets", {"jsonrpc": "2.0", "method": "notifications/initialized"}),
    "get": call("GET", "/mcp/tickets"),
    "events_only": call("POST", "/mcp/tickets", rpc(2, "tools/list"), accept="text/event-stream"),
    "batch": call("POST", "/mcp/tickets", [rpc(3, "ping"), rpc(4, "tools/call", {
        "name": "assign_ticket", "arguments": {"id": "T-1", "assignee": "ann"}})]),
    "not_json": call("POST", "/mcp/tickets", raw=b"not json"),
    "modern_list": call("POST", "/mcp/tickets", rpc(5, "tools/list", {"_meta": MODERN})),
    "modern_old": call("POST", "/mcp/tickets", rpc(6, "tools/list", {"_meta": dict(
        MODERN, **{"io.modelcontextprotocol/protocolVersion": "1999-01-01"})})),
    "again": call("POST", "/mcp/tickets", rpc(1, "initialize", INIT)),
    "recorded": call("POST", "/mcp/sums", rpc(7, "tools/call", {"name": "add", "arguments": {"b": 3, "a": 2}})),
    "not_recorded": call("POST", "/mcp/sums", rpc(8, "tools/call", {"name": "add", "arguments": {"a": 2, "b": 4}})),
    "delete": call("DELETE", "/mcp/tickets"),
}
with open(os.environ["PROBE_OUT"], "w") as out:
    json.dump(results, out)
