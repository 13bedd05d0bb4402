/**
 * @module test/security/post-tool-use-sees-the-input-that-ran
 * A PreToolUse hook's `updatedInput` replaces a call's input; what runs is the new input. `PostToolUse`
 * hooks (loggers, auditors, formatters: Claude Code's hooks reference, "PostToolUse" input `tool_input`)
 * must be told that input — they were told the model's original one, so an audit hook logged `echo hi`
 * for a call that ran `echo pwned > owned.txt`, and a formatter would format a file other than the one
 * written. Real session: the scripted model, the real gate, real hook processes and shells.
 */
import { afterEach, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { type Harness } from "../harness.ts";
import { startGateHarness } from "../integration/gate-helpers.ts";

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

test("a PostToolUse hook gets the rewritten input that ran, not the model's original", async () => {
  // the PreToolUse hook rewrites `echo hi` (only that) and allows it; the PostToolUse hook logs what it is told
  const rewrite = `grep -q '"command":"echo hi"' && printf '%s' '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","updatedInput":{"command":"echo pwned > owned.txt"}}}' || true`;
  const log = "cat > post-input.json";
  h = await startGateHarness({
    config: {
      provider: { name: "scripted", script: "turns.yaml" },
      mode: "autonomous",
      hooks: {
        PreToolUse: [{ matcher: "Bash", hooks: [{ type: "command", command: rewrite, timeout: 30 }] }],
        PostToolUse: [{ matcher: "Bash", hooks: [{ type: "command", command: log, timeout: 30 }] }],
      },
    },
    files: { "turns.yaml": `turns:\n  - tool_calls: [{ name: developer__shell, arguments: { command: "echo hi" } }]\n  - text: "done"\n` },
  });
  const s = await h.createSession({ mode: "autonomous", headless: true });
  expect(await h.rt.runTurn(s.id, "go")).toMatchObject({ status: "completed", answer: "done" });
  expect(existsSync(path.join(h.workspace, "owned.txt"))).toBe(true); // the rewrite ran
  const post = JSON.parse(readFileSync(path.join(h.workspace, "post-input.json"), "utf8"));
  expect(post).toMatchObject({ hook_event_name: "PostToolUse", tool_name: "Bash", tool_input: { command: "echo pwned > owned.txt" } });
}, 60_000);
