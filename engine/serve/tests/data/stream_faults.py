"""The stream-faults test's agent, on the official SDKs: `stream_faults.py SDK OUT`.

SDK is `openai` (Chat Completions), `responses` (OpenAI Responses), `anthropic` (Messages)
or `gemini` (google-genai on the Gemini API). It makes a plain call, then a streamed one, and if the stream breaks (an
exception while reading it), one more streamed call, as an agent retrying on its own would.
Each client has a 3 s timeout and the SDK's default retries. It writes what it saw to OUT as
JSON: the plain call's text, each stream's text so far, and the exception each raised.
"""

import json
import sys

SDK, OUT = sys.argv[1], sys.argv[2]
ASK = "Tell me about streams."


def openai_calls():
    from openai import OpenAI
    client = OpenAI(timeout=3.0)
    messages = [{"role": "user", "content": ASK}]
    plain = client.chat.completions.create(model="simtape", messages=messages)

    def stream(texts):
        for chunk in client.chat.completions.create(model="simtape", messages=messages, stream=True):
            if chunk.choices and chunk.choices[0].delta.content:
                texts.append(chunk.choices[0].delta.content)
    return plain.choices[0].message.content, stream


def responses_calls():
    from openai import OpenAI
    client = OpenAI(timeout=3.0)
    plain = client.responses.create(model="simtape", input=ASK)

    def stream(texts):
        for event in client.responses.create(model="simtape", input=ASK, stream=True):
            if event.type == "response.output_text.delta":
                texts.append(event.delta)
    return plain.output_text, stream


def anthropic_calls():
    import anthropic
    client = anthropic.Anthropic(timeout=3.0)
    messages = [{"role": "user", "content": ASK}]
    plain = client.messages.create(model="simtape", max_tokens=256, messages=messages)

    def stream(texts):
        with client.messages.stream(model="simtape", max_tokens=256, messages=messages) as events:
            for text in events.text_stream:
                texts.append(text)
    return plain.content[0].text, stream


def gemini_calls():
    from google import genai
    from google.genai import types
    # The SDK's default is no retries; its timeout is in milliseconds.
    client = genai.Client(http_options=types.HttpOptions(timeout=3000))
    plain = client.models.generate_content(model="simtape", contents=ASK)

    def stream(texts):
        for chunk in client.models.generate_content_stream(model="simtape", contents=ASK):
            if chunk.text:
                texts.append(chunk.text)
    return plain.text, stream


def main():
    plain, stream = {"openai": openai_calls, "responses": responses_calls,
                     "anthropic": anthropic_calls, "gemini": gemini_calls}[SDK]()
    seen = {"plain": plain, "streams": []}
    for _ in range(2):
        texts = []
        try:
            stream(texts)
            seen["streams"].append({"text": "".join(texts), "error": None})
            break
        except Exception as error:  # what the SDK raised is what the test checks
            seen["streams"].append({"text": "".join(texts), "error": type(error).__name__,
                                    "message": str(error)})
    with open(OUT, "w") as out:
        json.dump(seen, out)


if __name__ == "__main__":
    main()
