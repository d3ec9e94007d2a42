"""An OpenAI Agents SDK agent as a pytest test: simtape serves its model (docs/pytest.md)."""

import pytest
from agents import Agent, Runner, function_tool


@function_tool
def multiply(a: int, b: int) -> int:
    """Multiplies two integers."""
    return a * b


@pytest.mark.simtape("scenario.toml", seeds="0..20")
def test_the_agent_multiplies():
    agent = Agent(
        name="calc",
        instructions="You answer arithmetic questions with your tools.",
        tools=[multiply],
        model="gpt-4.1-mini",
    )
    result = Runner.run_sync(agent, "What is 6 times 7?")
    assert "42" in result.final_output
