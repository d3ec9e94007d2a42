// A Vercel AI SDK agent as a node:test test, ten seeds under simtape serve.
import test from "node:test";
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { generateText, jsonSchema, stepCountIs, tool } from "ai";
import { createOpenAI } from "@ai-sdk/openai";
import { runSeed, simtapeTest } from "../index.js";

const scenario = fileURLToPath(new URL("./scenario.toml", import.meta.url));
const tapes = process.env.SIMTAPE_NODE_TAPES ?? ".simtape/tapes";

simtapeTest(test, "the agent multiplies", scenario, { seeds: "0..10", tapes }, async () => {
  const openai = createOpenAI({ baseURL: process.env.OPENAI_BASE_URL, apiKey: process.env.OPENAI_API_KEY });
  const multiply = tool({
    description: "Multiplies two integers.",
    inputSchema: jsonSchema({
      type: "object",
      properties: { a: { type: "integer" }, b: { type: "integer" } },
      required: ["a", "b"],
    }),
    execute: async ({ a, b }) => String(a * b),
  });
  const result = await generateText({
    model: openai("gpt-4.1-mini"),
    system: "You answer arithmetic questions with your tools.",
    prompt: "What is 6 times 7?",
    tools: { multiply },
    stopWhen: stepCountIs(3),
  });
  assert.match(result.text, /42/);
});

test("a test function that never calls the model fails saying so, and the environment comes back", async () => {
  const before = process.env.OPENAI_BASE_URL;
  const run = await runSeed(scenario, 0, async ({ env }) => {
    assert.equal(process.env.OPENAI_BASE_URL, env.OPENAI_BASE_URL);
  }, { tape: `${tapes}/silent/seed-0.tape` });
  assert.equal(run.ok, false);
  assert.match(run.verdict, /^fail: no model calls: the agent never called the model/);
  assert.equal(process.env.OPENAI_BASE_URL, before);
});
