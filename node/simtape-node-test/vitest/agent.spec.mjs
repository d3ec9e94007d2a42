// The Vercel AI SDK agent of test/agent.test.mjs under vitest: the helper registers one
// vitest test per seed the same way it does for node:test (`npx vitest run vitest/`).
import { test, expect } from "vitest";
import { fileURLToPath } from "node:url";
import { multiplyingAgent } from "../agents/vercel.mjs";
import { reproduceCommand, simtapeTest } from "../index.js";

const scenario = fileURLToPath(new URL("../test/scenario.toml", import.meta.url));
const tapes = process.env.SIMTAPE_NODE_TAPES ?? ".simtape/tapes";

simtapeTest(test, "the agent multiplies under vitest", scenario, { seeds: "0..5", tapes }, async () => {
  expect(await multiplyingAgent()).toMatch(/42/);
});

test("a failing seed's reproduce command reruns it under vitest", (context) => {
  expect(reproduceCommand(3, "the agent multiplies under vitest", context)).toBe(
    "SIMTAPE_SEED=3 npx vitest run vitest/agent.spec.mjs -t 'the agent multiplies under vitest'",
  );
});
