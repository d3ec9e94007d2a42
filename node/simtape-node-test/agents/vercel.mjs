// The Vercel AI SDK agent the helper's tests run (test/agent.test.mjs under node:test,
// vitest/agent.spec.mjs under vitest): `generateText` with one tool through `@ai-sdk/openai`,
// pointed at the endpoint the helper put in the environment. Returns the model's answer.
import { generateText, jsonSchema, stepCountIs, tool } from "ai";
import { createOpenAI } from "@ai-sdk/openai";

export async function multiplyingAgent() {
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
  return result.text;
}
