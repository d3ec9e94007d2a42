"""A LangGraph graph as a pytest test: simtape serves its model (docs/frameworks.md)."""

import pytest
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition


@tool
def multiply(a: int, b: int) -> int:
    """Multiplies two integers."""
    return a * b


@pytest.mark.simtape("scenario.toml", seeds="0..10")
def test_the_graph_multiplies():
    # ChatOpenAI's client reads OPENAI_BASE_URL and OPENAI_API_KEY, which the plugin sets.
    model = ChatOpenAI(model="gpt-4.1-mini").bind_tools([multiply])

    def call_model(state: MessagesState):
        return {"messages": [model.invoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("model", call_model)
    graph.add_node("tools", ToolNode([multiply]))
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", tools_condition, ["tools", END])
    graph.add_edge("tools", "model")
    result = graph.compile().invoke({"messages": [("user", "What is 6 times 7?")]})
    assert "42" in result["messages"][-1].content
