"""Sends the endpoints test's requests with the standard library and writes what came back
(status and body) as JSON to the file named by PROBE_OUT."""

import json
import os
import urllib.error
import urllib.request

BASE = os.environ["SIMTAPE_SERVE_URL"]


def call(method, path, body=None):
    request = urllib.request.Request(BASE + path, data=body, method=method,
                                     headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(request) as response:
            return [response.status, response.read().decode()]
    except urllib.error.HTTPError as error:
        return [error.code, error.read().decode()]


def chat(text):
    body = {"model": "m", "messages": [{"role": "user", "content": text}]}
    return call("POST", "/v1/chat/completions", json.dumps(body).encode())


def main():
    results = {
        "unknown": call("POST", "/v1/nope", b"{}"),
        "not_json": call("POST", "/v1/messages", b"not json"),
        "wrong_shape": call("POST", "/v1/messages", b'{"model": "m"}'),
        "models": call("GET", "/v1/models"),
        "hello": chat("hello"),
        "unmatched": chat("something else"),
    }
    with open(os.environ["PROBE_OUT"], "w") as out:
        json.dump(results, out)


if __name__ == "__main__":
    main()
