/**
 * PreToolUse hooks over the real runtime: a hook that exits 2 silently, sleeps past its timeout,
 * cannot start, or prints an unknown decision leaves the tool un-run; in a headless run the call is
 * refused at once with the hook's code, and the run goes on.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { type Harness } from "../harness.ts";
import { startGateHarness } from "./gate-helpers.ts";

const FIX = resolve(import.meta.dir, "../fixtures/hooks");
let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const SCRIPT = `
turns:
  - tool_calls: [{ name: developer__write_file, arguments: { path: "hooked.txt", content: "x" } }]
  - text: "done"
`;

describe("hooks that fail never allow", () => {
  test.each([
    ["exits 2 silently", `${FIX}/exit2-silent.sh`, 10, "denied"],
    ["sleeps past its timeout", `${FIX}/sleep-forever.sh /dev/null`, 0.5, "hook_timeout"],
    ["cannot start", `${FIX}/missing-hook.sh`, 10, "hook_error"],
    ["prints permissionDecision alow", `${FIX}/bad-decision.sh`, 10, "hook_output_invalid"],
  ])("a hook that %s leaves the tool un-run (headless, autonomous)", async (_name, command, timeout, code) => {
    h = await startGateHarness({
      config: {
        provider: { name: "scripted", script: "turns.yaml" },
        mode: "autonomous",
        hooks: { PreToolUse: [{ matcher: "Write", hooks: [{ type: "command", command, timeout }] }] },
      },
      files: { "turns.yaml": SCRIPT },
    });
    const s = await h.createSession({ mode: "autonomous", headless: true });
    const refused: { code: string; inspector?: string }[] = [];
    h.rt.gate.onRefused((r) => refused.push(r));
    const r = await h.rt.runTurn(s.id, "go");
    expect(r).toMatchObject({ status: "completed", answer: "done" });
    expect(existsSync(join(h.workspace, "hooked.txt"))).toBe(false);
    expect(refused).toMatchObject([{ code, inspector: "hook" }]);
    const tool = (await h.rt.store.listMessages(s.id)).find((m) => m.role === "tool")!;
    expect(JSON.parse(tool.content)).toMatchObject({ error: { code } });
    expect(h.rt.cards.size).toBe(0);
  });
});
