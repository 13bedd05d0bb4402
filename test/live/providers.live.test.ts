/**
 * Live smoke test (issue 19), opt-in: one tool loop against each real API — `openai` (Chat
 * Completions), `openai-responses` (when this build has that adapter) and `anthropic` — through the
 * whole runtime (loop, gate, a real `developer__read_file`, the store). It runs only with
 * `AIRLOCK_LIVE=1` AND the provider's key in the environment (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`);
 * otherwise each test is skipped, with the reason in its name and one line on stderr, so a plain
 * `bun test` (or CI) never calls a paid API by accident.
 *
 *   AIRLOCK_LIVE=1 OPENAI_API_KEY=… ANTHROPIC_API_KEY=… bun test --timeout 120000 test/live/
 *
 * Optional: `AIRLOCK_LIVE_<PROVIDER>_MODEL` (e.g. `AIRLOCK_LIVE_OPENAI_MODEL=gpt-4o-mini`) and
 * `AIRLOCK_LIVE_<PROVIDER>_BASE_URL` (another endpoint of the same API, e.g. a local Ollama `/v1`).
 */
import { afterEach, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { ProviderName } from "../../src/config/schema.ts";
import { startHarness, type Harness } from "../harness.ts";

interface LiveTarget {
  provider: string;
  keyVar: string;
  /** The variables' prefix for overrides: AIRLOCK_LIVE_<X>_MODEL / _BASE_URL. */
  envName: string;
  model: string;
}

const TARGETS: LiveTarget[] = [
  { provider: "openai", keyVar: "OPENAI_API_KEY", envName: "OPENAI", model: "gpt-4.1-mini" },
  { provider: "openai-responses", keyVar: "OPENAI_API_KEY", envName: "OPENAI_RESPONSES", model: "gpt-4.1-mini" },
  { provider: "anthropic", keyVar: "ANTHROPIC_API_KEY", envName: "ANTHROPIC", model: "claude-haiku-4-5" },
];

/** Why the live test of `t` does not run here; null when it does. */
function liveSkipReason(t: LiveTarget, env: Record<string, string | undefined> = process.env): string | null {
  if (env.AIRLOCK_LIVE !== "1") return "AIRLOCK_LIVE=1 is not set (live tests call paid APIs; opt in explicitly)";
  if (!(ProviderName.options as readonly string[]).includes(t.provider)) return `this build has no ${t.provider} adapter`;
  if (!env[t.keyVar]) return `${t.keyVar} is not set`;
  return null;
}

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe("live smoke test: one tool loop against each real API", () => {
  for (const t of TARGETS) {
    const reason = liveSkipReason(t);
    if (reason) console.warn(`airlock live test ${t.provider}: SKIPPED: ${reason}`);
    test.skipIf(reason !== null)(`${t.provider}: the model reads a file through the gate and answers with its content${reason ? ` [skipped: ${reason}]` : ""}`, async () => {
      const word = `kumquat-${randomBytes(4).toString("hex")}`;
      const model = process.env[`AIRLOCK_LIVE_${t.envName}_MODEL`] ?? t.model;
      const baseUrl = process.env[`AIRLOCK_LIVE_${t.envName}_BASE_URL`];
      h = await startHarness({
        config: {
          provider: { name: t.provider, model, api_key_env: t.keyVar, max_retries: 2, ...(baseUrl ? { base_url: baseUrl } : {}) },
          mode: "autonomous",
          tools: { offer: "both" },
          limits: { max_iterations: 8 },
        },
        workspaceFiles: { "secret-word.txt": `${word}\n` },
        env: { [t.keyVar]: process.env[t.keyVar] },
      });
      const s = await h.createSession();
      const r = await h.rt.runTurn(s.id, "Read the file secret-word.txt in the workspace with the developer__read_file tool, then reply with the word it contains and nothing else.");
      expect(r.error).toBeNull();
      expect(r.status).toBe("completed");
      expect(r.tool_calls).toBeGreaterThanOrEqual(1);
      expect(r.answer ?? "").toContain(word);
      const stored = await h.rt.store.listMessages(s.id);
      const result = stored.find((m) => m.role === "tool" && m.content.includes(word));
      expect(result).toBeDefined();
      console.warn(`airlock live test ${t.provider} (${model}): ${r.iterations} model calls, ${r.tool_calls} tool call(s), answer ${JSON.stringify(r.answer)}`);
    }, 120_000);
  }
});
