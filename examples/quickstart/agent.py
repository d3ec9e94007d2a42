"""A small agent on the official openai SDK: it asks the model, runs the tool the model
calls, and prints the model's answer. It knows nothing of simtape: the SDK reads
OPENAI_BASE_URL and OPENAI_API_KEY from the environment."""

import json

from openai import OpenAI

TOOLS = [{
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"location": {"type": "string"}},
            "required": ["location"],
        },
    },
}]


def get_weather(location):
    return f"sunny, 22 C in {location}"


client = OpenAI(max_retries=1)  # one retry: a second 429 in a row fails the run
messages = [
    {"role": "system", "content": "You answer questions about the weather."},
    {"role": "user", "content": "Weather in Paris?"},
]
while True:
    reply = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=TOOLS)
    message = reply.choices[0].message
    if not message.tool_calls:
        print(message.content)
        break
    messages.append(message.model_dump(exclude_none=True))
    for call in message.tool_calls:
        arguments = json.loads(call.function.arguments)
        messages.append(
            {"role": "tool", "tool_call_id": call.id, "content": get_weather(**arguments)}
        )
