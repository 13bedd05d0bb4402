/**
 * A key typed before a card of an attended `airlock run` reached the person never answers it. The terminal
 * approver asked its question the moment the card was written, and took the first line typed: a `y` + Enter
 * meant for something else (a shell the person thought they were in, a double-typed answer to the card before,
 * a reflex as the card scrolled in) allowed a call nobody read. `airlock attach` drops type-ahead and ignores
 * keys for 400 ms after a card is drawn (attach-type-ahead-never-approves-a-card); `airlock run` must too.
 * A real PTY (util-linux `script`), the scripted provider.
 */
import { expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { airlockRun, runInPty as runInPtyOf, scriptedDataDir, tempDirs } from "../run-in-pty.ts";

const tempDir = tempDirs();

function setup(calls: string[]): { dir: string; ws: string } {
  const dir = tempDir("airlock-run-ahead-");
  const turns = calls.map((c) => `  - tool_calls:\n      - name: developer__shell\n        arguments: { command: ${JSON.stringify(c)} }\n`).join("");
  const ws = scriptedDataDir(dir, `turns:\n${turns}  - text: "done"\n`, "provider: { name: scripted, script: turns.yaml }\nmode: smart\n");
  return { dir, ws };
}

/**
 * `airlock run` in a PTY. `onScreen(screen, type)` is called on each chunk of output; what it types goes to the
 * PTY at once. Killed after 30 s.
 */
async function runInPty(dir: string, ws: string, onScreen: (screen: string, type: (s: string) => void) => void): Promise<{ code: number; screen: string }> {
  return await runInPtyOf({ cmd: airlockRun(dir, "go"), cwd: ws, killAfterMs: 30_000, onScreen: (screen, type) => onScreen(screen, (s) => void type(s)) });
}

test("a y + Enter typed the moment the card appears does not allow it; the answer typed once the question is armed decides", async () => {
  const { dir, ws } = setup(["echo hi > out.txt"]);
  let sent = 0;
  const { code, screen } = await runInPty(dir, ws, (s, type) => {
    if (sent === 0 && s.includes("needs your approval")) {
      sent = 1;
      type("y\r"); // the reflex: before the person could read the card
    }
    if (sent === 1 && s.includes("allow? [y]once")) {
      sent = 2;
      setTimeout(() => type("n\r"), 200); // the person's answer, after the question is armed
    }
  });
  expect(screen).not.toContain("allowed once");
  expect(screen).toContain("denied");
  expect(existsSync(join(ws, "out.txt"))).toBe(false);
  expect(code).toBe(0);
});

test("a y typed without Enter before the question is not left on the prompt line for the next Enter", async () => {
  const { dir, ws } = setup(["echo hi > out.txt"]);
  let sent = 0;
  const { screen } = await runInPty(dir, ws, (s, type) => {
    if (sent === 0 && s.includes("needs your approval")) {
      sent = 1;
      setTimeout(() => type("y"), 200); // typed while the card is shown, before the question: no Enter
    }
    if (sent === 1 && s.includes("allow? [y]once")) {
      sent = 2;
      setTimeout(() => type("\r"), 700); // Enter alone: the default, No
    }
  });
  expect(screen).not.toContain("allowed once");
  expect(existsSync(join(ws, "out.txt"))).toBe(false);
});

test("the second y of a double-typed answer, landing as the next card is drawn, does not answer it", async () => {
  const { dir, ws } = setup(["echo a > a.txt", "echo b > b.txt"]);
  let prompts = 0;
  let again = false;
  const { screen } = await runInPty(dir, ws, (s, type) => {
    const n = s.split("allow? [y]once").length - 1;
    if (n > prompts) {
      prompts = n;
      setTimeout(() => type(n === 1 ? "y\r" : "n\r"), 600); // the person's answers, once each question is armed
    }
    if (!again && s.split("needs your approval").length - 1 === 2) {
      again = true;
      type("y\r"); // the first answer typed twice: its second y arrives with the second card
    }
  });
  expect(existsSync(join(ws, "a.txt"))).toBe(true);
  expect(existsSync(join(ws, "b.txt"))).toBe(false);
  expect(screen.split("allowed once").length - 1).toBe(1);
});
