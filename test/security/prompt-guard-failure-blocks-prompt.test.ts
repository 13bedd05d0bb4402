/**
 * @module test/security/prompt-guard-failure-blocks-prompt
 * A `UserPromptSubmit` hook may be a guard (secrets in prompts): one that crashes, cannot start, times
 * out or prints an answer the protocol does not allow blocks the prompt (`prompt_blocked`, naming the
 * failure), where Claude Code would send it. The prompt is never stored, so the model never gets it —
 * not in this turn, not in the next one.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { startHarness, type Harness } from "../harness.ts";

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const SECRET = "sk-live-0123456789abcdefghij";

describe("a failing UserPromptSubmit guard blocks the prompt", () => {
  test.each([
    ["crashes", "cat >/dev/null; exit 1", 10, "hook_error"],
    ["cannot start", "/nonexistent/guard.sh", 10, "hook_error"],
    ["times out", "cat >/dev/null; sleep 1000", 0.5, "hook_timeout"],
    ["answers a decision UserPromptSubmit does not have", `cat >/dev/null; echo '{"decision":"approve"}'`, 10, "hook_output_invalid"],
    ["prints JSON with a key twice", `cat >/dev/null; echo '{"decision":"block","decision":"block"}'`, 10, "hook_output_invalid"],
  ])("a guard that %s: the prompt is refused and never reaches the model", async (_what, command, timeout, code) => {
    h = await startHarness({
      config: {
        provider: { name: "scripted", script: "turns.yaml" },
        mode: "autonomous",
        hooks: { UserPromptSubmit: [{ hooks: [{ type: "command", command, timeout }] }] },
      },
      files: { "turns.yaml": "turns:\n  - text: answered\n" },
    });
    const s = await h.createSession({ mode: "autonomous" });
    const r = await h.rt.runTurn(s.id, `deploy with ${SECRET}`);
    expect(r).toMatchObject({ status: "failed", iterations: 0, answer: null, error: { code: "prompt_blocked" } });
    expect(r.error!.message).toContain(code);
    expect(await h.rt.store.listMessages(s.id)).toEqual([]);
    // the next turn (the guard still failing) sends nothing either: the refused prompt was never stored
    const again = await h.rt.runTurn(s.id, "hello");
    expect(again).toMatchObject({ status: "failed", iterations: 0 });
    expect(JSON.stringify(await h.rt.store.listMessages(s.id))).not.toContain(SECRET);
  });
});
