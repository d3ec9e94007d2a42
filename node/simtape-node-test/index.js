// simtape-node-test: a node:test test function as the agent of a simtape scenario. Each seed
// runs the function once with `simtape serve --in-process` answering its model and MCP calls;
// the endpoint variables are in process.env while it runs (restored after), and serve's
// verdict judges the seed (docs/pytest.md, "node").
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { accessSync, constants, mkdirSync } from "node:fs";
import { delimiter, dirname, join, relative, resolve } from "node:path";

const READY = "serve: waiting for the agent";

/** The simtape binary: $SIMTAPE_BIN, else `simtape` on PATH. */
export function findBinary() {
  const named = process.env.SIMTAPE_BIN;
  const candidates = named ? [named] : (process.env.PATH ?? "").split(delimiter).map((dir) => join(dir, "simtape"));
  for (const path of candidates) {
    try {
      accessSync(path, constants.X_OK);
      return path;
    } catch {}
  }
  throw new Error(named
    ? `SIMTAPE_BIN=${named} is not an executable file`
    : "the simtape binary was not found on PATH and SIMTAPE_BIN is not set");
}

/** Seeds as `simtape sweep --seeds` spells them: N, A..B (B excluded), comma lists. */
export function parseSeeds(spec) {
  if (Number.isInteger(spec)) return [spec];
  if (Array.isArray(spec)) return spec;
  const seeds = [];
  for (const part of String(spec).split(",")) {
    const range = part.trim().match(/^(\d+)\.\.(\d+)$/);
    if (range && Number(range[2]) > Number(range[1])) {
      for (let seed = Number(range[1]); seed < Number(range[2]); seed++) seeds.push(seed);
    } else if (/^\d+$/.test(part.trim())) {
      seeds.push(Number(part.trim()));
    } else {
      throw new Error(`seeds ${JSON.stringify(spec)}: ${JSON.stringify(part)} is not N or A..B (e.g. 0..10)`);
    }
  }
  return seeds;
}

/** Runs `fn` once as the agent of `scenario` at `seed`; resolves to serve's verdict. */
export async function runSeed(scenario, seed, fn, { tape, binary = findBinary() } = {}) {
  mkdirSync(dirname(tape), { recursive: true });
  const serve = spawn(binary, ["serve", scenario, "--seed", String(seed), "--tape", tape, "--in-process"], {
    stdio: ["pipe", "pipe", "pipe"],
  });
  let stderr = "";
  serve.stderr.on("data", (chunk) => (stderr += chunk));
  const ended = new Promise((done) => serve.on("close", (code) => done(code)));
  const lines = createInterface({ input: serve.stdout })[Symbol.asyncIterator]();
  const env = {};
  for (;;) {
    const { value: line, done } = await lines.next();
    if (done) throw new Error(`simtape serve ${scenario} --seed ${seed} ended (exit ${await ended}) before serving: ${stderr.trim()}`);
    const exported = line.trim().match(/^export ([A-Z_]+)=(.*)$/);
    if (exported) env[exported[1]] = exported[2];
    if (line.startsWith(READY)) break;
  }
  const saved = Object.fromEntries(Object.keys(env).map((name) => [name, process.env[name]]));
  Object.assign(process.env, env);
  let raised;
  try {
    await fn({ seed, tape, env });
  } catch (error) {
    raised = error;
  } finally {
    for (const [name, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  }
  serve.stdin.end(`exit ${raised === undefined ? 0 : 1}\n`);
  const rest = [];
  for (;;) {
    const { value: line, done } = await lines.next();
    if (done) break;
    rest.push(line);
  }
  const code = await ended;
  const verdict = rest.filter((line) => line.startsWith("verdict: ")).map((line) => line.slice(9)).pop();
  if (verdict === undefined) throw new Error(`simtape serve ended (exit ${code}) without a verdict: ${stderr.trim()}`);
  return { seed, tape, verdict, ok: code === 0 && verdict === "ok", raised, summary: rest.filter((l) => l.startsWith("serve: ")) };
}

/**
 * The command that reruns one seed of the test `name` under the runner that ran it, from the
 * working directory: vitest's `run FILE -t NAME`, or node's `--test --test-name-pattern`.
 * `context` is the test's context argument (vitest's names its file in `task.file`, node's
 * in `filePath`).
 */
export function reproduceCommand(seed, name, context) {
  const shown = (file) => (file ? relative(process.cwd(), file) : "");
  const vitestFile = context?.task?.file?.filepath;
  if (vitestFile !== undefined || process.env.VITEST !== undefined) {
    return `SIMTAPE_SEED=${seed} npx vitest run ${shown(vitestFile)} -t '${name}'`.replace("  ", " ");
  }
  const file = shown(context?.filePath ?? process.argv[1]);
  return `SIMTAPE_SEED=${seed} node --test --test-name-pattern '${name}' ${file}`.trimEnd();
}

/**
 * Registers one node:test test per seed: `simtapeTest(test, "name", "scenario.toml",
 * { seeds: "0..10" }, async ({ seed }) => { ...the agent... })`. SIMTAPE_SEED=N runs only N.
 * A failing seed fails its test naming the seed, the verdict, the rerun command and the tape.
 */
export function simtapeTest(test, name, scenario, { seeds = 0, tapes = ".simtape/tapes" } = {}, fn) {
  const chosen = process.env.SIMTAPE_SEED !== undefined ? parseSeeds(process.env.SIMTAPE_SEED) : parseSeeds(seeds);
  const path = resolve(scenario);
  const slug = name.replace(/[^A-Za-z0-9_.-]+/g, "_");
  for (const seed of chosen) {
    test(`${name} [seed ${seed}]`, async (context) => {
      const tape = join(tapes, slug, `seed-${seed}.tape`);
      const run = await runSeed(path, seed, fn, { tape });
      if (run.ok) return;
      const lines = [`simtape: seed ${seed} of ${scenario}: ${run.verdict}`];
      if (run.raised !== undefined) lines.push(`  the test raised: ${String(run.raised?.message ?? run.raised).split("\n")[0]}`);
      lines.push(...run.summary.map((line) => `  ${line}`));
      lines.push(`  reproduce: ${reproduceCommand(seed, name, context)}`);
      lines.push(`  tape: ${tape}`);
      throw new Error(lines.join("\n"));
    });
  }
}
