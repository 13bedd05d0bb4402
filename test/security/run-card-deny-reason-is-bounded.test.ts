/**
 * `n REASON` at the terminal card of an attended `airlock run` tells the model REASON. Over HTTP a decision's
 * reason is at most 2,000 characters (routes/actions.ts); the terminal took any length, so a paste (a log, a
 * file) went whole into the card's row, the audit log and the model's context. A reason over 2,000 characters
 * is refused there too: the person is asked again. A real PTY (`script`).
 */
import { expect, test } from "bun:test";
import { airlockRun, runAnswering, scriptedDataDir, tempDirs } from "../run-in-pty.ts";

const tempDir = tempDirs();

test("n with a reason over 2,000 characters asks again; a short one is told to the model", async () => {
  const dir = tempDir("airlock-card-reason-len-");
  const ws = scriptedDataDir(
    dir,
    `turns:\n  - tool_calls: [{ name: developer__shell, arguments: { command: "touch a.txt" } }]\n  - text: done\n`,
    "provider: { name: scripted, script: turns.yaml }\nmode: approve\nsandbox: read-only\n",
  );
  const answers = [`n ${"x".repeat(3000)}END\n`, "n short\n"];
  const { screen, answered } = await runAnswering({ cmd: airlockRun(dir, "go", ws), cwd: ws, env: { NO_COLOR: "1" } }, (i) => answers[i] ?? "n\n");
  expect(answered).toBe(2); // asked again after the long reason
  expect(screen).not.toContain("xxxxEND)");
  expect(screen).toContain("denied (the model is told: short)");
});
