"""A small tool-using agent on the official Anthropic Python SDK (Messages).

It reads ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY from the environment, as the SDK does, so
it runs unchanged against Anthropic or against `simtape serve`. The first call is a plain
request; the second streams. Before them it lists the models and counts the request's tokens.
Both answers start with a signed thinking block, which goes back to the model as it came.
The SDK retries a 429 or a 5xx (a 529 "overloaded" included) on its own (its default: twice,
honouring retry-after). Exits 0 when the final answer names the product.
"""

import sys

import anthropic

TOOLS = [{
    "name": "multiply",
    "description": "Multiplies two integers.",
    "input_schema": {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    },
}]


def main() -> int:
    client = anthropic.Anthropic()
    system = "You answer arithmetic questions with your tools."
    messages = [{"role": "user", "content": "What is 6 times 7?"}]
    # The model list and a token count, as agents ask before they start.
    if not any(model.id == "simtape" for model in client.models.list()):
        print("the served model list does not name simtape", file=sys.stderr)
        return 1
    counted = client.messages.count_tokens(
        model="simtape", system=system, messages=messages, tools=TOOLS,
    )
    if counted.input_tokens <= 0:
        print("count_tokens answered no tokens", file=sys.stderr)
        return 1
    first = client.messages.create(
        model="simtape", max_tokens=1024, system=system, messages=messages, tools=TOOLS,
    )
    # The thinking block comes first and goes back as it came, signature and all.
    if first.content[0].type != "thinking" or not first.content[0].signature:
        print(f"no signed thinking block first: {first.content!r}", file=sys.stderr)
        return 1
    messages.append({"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]})
    results = []
    for block in first.content:
        if block.type == "tool_use":
            product = block.input["a"] * block.input["b"]
            results.append({"type": "tool_result", "tool_use_id": block.id, "content": str(product)})
    messages.append({"role": "user", "content": results})
    with client.messages.stream(
        model="simtape", max_tokens=1024, system=system, messages=messages, tools=TOOLS,
    ) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    if final.content[0].type != "thinking" or "42" not in final.content[0].thinking:
        print(f"the stream carried no thinking block: {final.content!r}", file=sys.stderr)
        return 1
    print(text)
    return 0 if "42" in text else 1


if __name__ == "__main__":
    sys.exit(main())
