"""Sends the endpoints test's Gemini API requests with the standard library and writes what
came back (status and body) as JSON to the file named by PROBE_OUT."""

import json
import os

from probe import call

MODEL = "/v1beta/models/gemini-2.5-flash"


def generate(text):
    body = {"contents": [{"role": "user", "parts": [{"text": text}]}]}
    return call("POST", MODEL + ":generateContent", json.dumps(body).encode())


results = {
    "unknown_method": call("POST", MODEL + ":embedContent", b"{}"),
    "unknown_path": call("GET", "/v1beta/tunedModels"),
    "not_json": call("POST", MODEL + ":generateContent", b"not json"),
    "wrong_shape": call("POST", MODEL + ":generateContent", b'{"contents": 3}'),
    "models": call("GET", "/v1beta/models"),
    "model": call("GET", MODEL),
    "count": call("POST", MODEL + ":countTokens", b'{"contents": []}'),
    "hello": generate("hello"),
    "unmatched": generate("something else"),
}
with open(os.environ["PROBE_OUT"], "w") as out:
    json.dump(results, out)
