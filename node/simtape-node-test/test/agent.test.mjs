// A Vercel AI SDK agent as a node:test test, ten seeds under simtape serve.
import test from "node:test";
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { multiplyingAgent } from "../agents/vercel.mjs";
import { reproduceCommand, runSeed, simtapeTest } from "../index.js";

const scenario = fileURLToPath(new URL("./scenario.toml", import.meta.url));
const tapes = process.env.SIMTAPE_NODE_TAPES ?? ".simtape/tapes";

simtapeTest(test, "the agent multiplies", scenario, { seeds: "0..10", tapes }, async () => {
  assert.match(await multiplyingAgent(), /42/);
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

test("a failing seed's reproduce command reruns it under node --test", (t) => {
  assert.equal(
    reproduceCommand(3, "the agent multiplies", t),
    "SIMTAPE_SEED=3 node --test --test-name-pattern 'the agent multiplies' test/agent.test.mjs",
  );
});
