//! Placeholder for the llm capability tests.
