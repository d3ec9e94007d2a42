"""A small tool-using agent on the official OpenAI Python SDK (Responses).

It reads OPENAI_BASE_URL and OPENAI_API_KEY from the environment, as the SDK does, so it
runs unchanged against OpenAI or against `simtape serve`. The first call streams (the
`response.*` events: the text as it arrives, the function call from its finished output
item); the second, after the agent ran the tool, is a plain call. Exits 0 when the final
answer names the product.
"""

import json
import sys

from openai import OpenAI

TOOLS = [{
    "type": "function",
    "name": "multiply",
    "description": "Multiplies two integers.",
    "parameters": {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    },
}]
INSTRUCTIONS = "You answer arithmetic questions with your tools."


def main() -> int:
    client = OpenAI(max_retries=0)
    items = [{"role": "user", "content": "What is 6 times 7?"}]
    stream = client.responses.create(
        model="simtape", instructions=INSTRUCTIONS, input=items, tools=TOOLS, stream=True,
    )
    text, reasoning, calls, completed = "", "", [], None
    for event in stream:
        if event.type == "response.output_text.delta":
            text += event.delta
        elif event.type == "response.reasoning_summary_text.delta":
            reasoning += event.delta
        elif event.type == "response.output_item.done" and event.item.type == "function_call":
            calls.append(event.item)
        elif event.type == "response.completed":
            completed = event.response
    if completed is None or completed.usage is None or completed.output_text != text:
        print(f"the stream did not complete as it streamed: {completed!r}", file=sys.stderr)
        return 2
    # The reasoning summary streams before the text, and is the finished reasoning item's.
    summaries = [part.text for item in completed.output if item.type == "reasoning" for part in item.summary]
    if not reasoning or summaries != [reasoning]:
        print(f"the reasoning summary did not stream: {reasoning!r} vs {summaries!r}", file=sys.stderr)
        return 2
    for call in calls:
        args = json.loads(call.arguments)
        items.append({"type": "function_call", "call_id": call.call_id, "name": call.name,
                      "arguments": call.arguments})
        items.append({"type": "function_call_output", "call_id": call.call_id,
                      "output": str(args["a"] * args["b"])})
    answer = client.responses.create(
        model="simtape", instructions=INSTRUCTIONS, input=items, tools=TOOLS,
    )
    print(answer.output_text)
    return 0 if "42" in answer.output_text else 1


if __name__ == "__main__":
    sys.exit(main())
