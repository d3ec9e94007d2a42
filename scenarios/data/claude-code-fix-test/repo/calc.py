"""A tiny calculator with a bug for an agent to fix."""


def add(a, b):
    return a - b
