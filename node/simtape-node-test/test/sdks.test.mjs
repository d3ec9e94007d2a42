// Agents on the official `openai` and `@anthropic-ai/sdk` packages as node:test tests, three
// seeds each under simtape serve: each SDK reads its base URL and key from the environment
// the helper sets, and the one fixture answers both (it matches message text, not a wire).
import test from "node:test";
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import OpenAI from "openai";
import Anthropic from "@anthropic-ai/sdk";
import { simtapeTest } from "../index.js";

const scenario = fileURLToPath(new URL("./scenario.toml", import.meta.url));
const tapes = process.env.SIMTAPE_NODE_TAPES ?? ".simtape/tapes";
const schema = {
  type: "object",
  properties: { a: { type: "integer" }, b: { type: "integer" } },
  required: ["a", "b"],
};
const multiply = ({ a, b }) => String(a * b);

simtapeTest(test, "the openai agent multiplies", scenario, { seeds: "0..3", tapes }, async () => {
  const client = new OpenAI();
  const tools = [{ type: "function", function: { name: "multiply", description: "Multiplies two integers.", parameters: schema } }];
  const messages = [{ role: "user", content: "What is 6 times 7?" }];
  for (;;) {
    const reply = await client.chat.completions.create({ model: "gpt-4.1-mini", messages, tools });
    const message = reply.choices[0].message;
    if (!message.tool_calls?.length) {
      assert.match(message.content, /42/);
      return;
    }
    messages.push(message);
    for (const call of message.tool_calls) {
      const content = multiply(JSON.parse(call.function.arguments));
      messages.push({ role: "tool", tool_call_id: call.id, content });
    }
  }
});

simtapeTest(test, "the anthropic agent multiplies", scenario, { seeds: "0..3", tapes }, async () => {
  const client = new Anthropic();
  const tools = [{ name: "multiply", description: "Multiplies two integers.", input_schema: schema }];
  const messages = [{ role: "user", content: "What is 6 times 7?" }];
  for (;;) {
    const reply = await client.messages.create({ model: "claude-sonnet-4-5", max_tokens: 256, messages, tools });
    const calls = reply.content.filter((block) => block.type === "tool_use");
    if (calls.length === 0) {
      const text = reply.content.filter((block) => block.type === "text").map((block) => block.text).join("");
      assert.match(text, /42/);
      return;
    }
    messages.push({ role: "assistant", content: reply.content });
    messages.push({
      role: "user",
      content: calls.map((call) => ({ type: "tool_result", tool_use_id: call.id, content: multiply(call.input) })),
    });
  }
});
