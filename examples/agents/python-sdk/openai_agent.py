"""A small tool-using agent on the official OpenAI Python SDK (Chat Completions).

It reads OPENAI_BASE_URL and OPENAI_API_KEY from the environment, as the SDK does, so it
runs unchanged against OpenAI or against `simtape serve`. The first call is a plain
request; the second streams. The SDK retries a 429 or a 5xx (a 529 included) on its own (its
default: twice, honouring retry-after). Exits 0 when the final answer names the product.
"""

import json
import sys

from openai import OpenAI

TOOLS = [{
    "type": "function",
    "function": {
        "name": "multiply",
        "description": "Multiplies two integers.",
        "parameters": {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
        },
    },
}]


def main() -> int:
    client = OpenAI()
    if "simtape" not in [model.id for model in client.models.list()]:
        print("the served model list does not name simtape", file=sys.stderr)
        return 1
    messages = [
        {"role": "system", "content": "You answer arithmetic questions with your tools."},
        {"role": "user", "content": "What is 6 times 7?"},
    ]
    first = client.chat.completions.create(model="simtape", messages=messages, tools=TOOLS)
    message = first.choices[0].message
    messages.append(message.model_dump(exclude_none=True))
    for call in message.tool_calls or []:
        args = json.loads(call.function.arguments)
        messages.append({"role": "tool", "tool_call_id": call.id, "content": str(args["a"] * args["b"])})
    text = ""
    stream = client.chat.completions.create(
        model="simtape", messages=messages, tools=TOOLS, stream=True,
        stream_options={"include_usage": True},
    )
    for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            text += chunk.choices[0].delta.content
    print(text)
    return 0 if "42" in text else 1


if __name__ == "__main__":
    sys.exit(main())
