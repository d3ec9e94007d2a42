"""A Pydantic AI agent as a pytest test: simtape serves its model (docs/frameworks.md)."""

import pytest
from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIChatModel


@pytest.mark.simtape("scenario.toml", seeds="0..10")
def test_the_agent_multiplies():
    # The model's client reads OPENAI_BASE_URL and OPENAI_API_KEY, which the plugin sets.
    agent = Agent(
        OpenAIChatModel("gpt-4.1-mini"),
        instructions="You answer arithmetic questions with your tools.",
    )

    @agent.tool_plain
    def multiply(a: int, b: int) -> int:
        """Multiplies two integers."""
        return a * b

    result = agent.run_sync("What is 6 times 7?")
    assert "42" in result.output
