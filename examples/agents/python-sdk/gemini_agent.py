"""A small tool-using agent on Google's official Gen AI Python SDK (`google-genai`, Gemini API).

It reads GOOGLE_GEMINI_BASE_URL and GEMINI_API_KEY from the environment, as the SDK does, so
it runs unchanged against Google or against `simtape serve`. It loops until the model stops
calling functions: each turn the model's function calls are run and their results sent back.
The first call is a plain `generate_content`; later ones stream. Before them it lists the
models and counts the request's tokens. It asks for the model's thoughts and checks they came
as thought parts. The SDK retries a 429, 500 or 503 on its own (three attempts).
Exits 0 when the final answer names the product.
"""

import sys

from google import genai
from google.genai import types

SYSTEM = "You answer arithmetic questions with your tools."
MULTIPLY = types.FunctionDeclaration(
    name="multiply",
    description="Multiplies two integers.",
    parameters_json_schema={
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    },
)
CONFIG = types.GenerateContentConfig(
    system_instruction=SYSTEM,
    tools=[types.Tool(function_declarations=[MULTIPLY])],
    automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
    thinking_config=types.ThinkingConfig(include_thoughts=True),
)
TURNS_MAX = 4


def run_function(call):
    if call.name != "multiply":
        return {"error": f"no function {call.name}"}
    return {"output": str(call.args["a"] * call.args["b"])}


def ask(client, contents, stream):
    """Returns the model turn's parts: whole, or joined from the streamed chunks."""
    if not stream:
        response = client.models.generate_content(model="simtape", contents=contents, config=CONFIG)
        return response.candidates[0].content.parts
    parts = []
    for chunk in client.models.generate_content_stream(model="simtape", contents=contents, config=CONFIG):
        parts.extend(chunk.candidates[0].content.parts or [])
    return parts


def main() -> int:
    retry = types.HttpRetryOptions(attempts=3, initial_delay=0.1, jitter=0)
    client = genai.Client(http_options=types.HttpOptions(retry_options=retry))
    contents = [types.Content(role="user", parts=[types.Part(text="What is 6 times 7?")])]
    # The model list and a token count, as agents ask before they start.
    if not any(model.name == "models/simtape" for model in client.models.list()):
        print("the served model list does not name simtape", file=sys.stderr)
        return 1
    if client.models.count_tokens(model="simtape", contents=contents).total_tokens <= 0:
        print("count_tokens answered no tokens", file=sys.stderr)
        return 1
    for turn in range(TURNS_MAX):
        parts = ask(client, contents, stream=turn > 0)
        if not parts or not parts[0].thought:
            print(f"the answer did not start with a thought part: {parts!r}", file=sys.stderr)
            return 1
        contents.append(types.Content(role="model", parts=parts))
        calls = [part.function_call for part in parts if part.function_call]
        if not calls:
            text = "".join(part.text or "" for part in parts if not part.thought)
            print(text)
            return 0 if "42" in text else 1
        results = [
            types.Part(function_response=types.FunctionResponse(
                id=call.id, name=call.name, response=run_function(call)))
            for call in calls
        ]
        contents.append(types.Content(role="user", parts=results))
    print(f"no answer after {TURNS_MAX} turns", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
