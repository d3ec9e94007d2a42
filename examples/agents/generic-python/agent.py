"""A small agent on OpenAI's Chat Completions wire with nothing but Python's standard library:
it asks the model for its task with one tool, `add`, runs each call the model asks for, sends
the results back and prints the model's answer.

How it behaves is set by its environment (the scenario's [[agent.variant]] tables set it):
  AGENT_RETRY=0   a model error (429, 5xx) ends it with exit 1; otherwise it retries, up to 5
                  times, after the retry-after the answer gives (at most 0.05 s of wall time:
                  simtape's time is virtual, the hint only has to be read)
  AGENT_CRASH=1   it crashes on the tool's result, with a traceback on stderr
  AGENT_EVENTS=1  it prints its own tool calls and answer as simtape's unified events (JSON
                  lines), besides its plain lines
"""
import json
import os
import sys
import time
import urllib.error
import urllib.request

TOOLS = [{
    "type": "function",
    "function": {
        "name": "add",
        "description": "Adds two integers.",
        "parameters": {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
        },
    },
}]


def event(**fields):
    if os.environ.get("AGENT_EVENTS") == "1":
        print(json.dumps(fields), flush=True)


def ask(messages):
    body = json.dumps({"model": "gpt-4o-mini", "messages": messages, "tools": TOOLS}).encode()
    request = urllib.request.Request(
        os.environ["OPENAI_BASE_URL"] + "/chat/completions",
        data=body,
        headers={"content-type": "application/json",
                 "authorization": "Bearer " + os.environ["OPENAI_API_KEY"]},
    )
    for attempt in range(6):
        try:
            with urllib.request.urlopen(request) as response:
                return json.load(response)["choices"][0]["message"]
        except urllib.error.HTTPError as error:
            if os.environ.get("AGENT_RETRY") == "0" or attempt == 5:
                print(f"model error {error.code}: giving up", file=sys.stderr)
                sys.exit(1)
            print(f"model error {error.code}: retrying", flush=True)
            time.sleep(min(float(error.headers.get("retry-after") or 0), 0.05))


def main():
    messages = [{"role": "user", "content": os.environ["SIMTAPE_TASK"]}]
    while True:
        reply = ask(messages)
        calls = reply.get("tool_calls") or []
        if not calls:
            answer = reply.get("content") or ""
            event(type="result", text=answer, is_error=False)
            print(answer)
            return
        messages.append(reply)
        for call in calls:
            arguments = json.loads(call["function"]["arguments"])
            event(type="tool_start", id=call["id"], name=call["function"]["name"], input=arguments)
            result = str(arguments["a"] + arguments["b"])
            if os.environ.get("AGENT_CRASH") == "1":
                raise ValueError(f"could not read the result of {call['function']['name']}: {result!r}")
            event(type="tool_end", id=call["id"], output=result, is_error=False)
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})


main()
