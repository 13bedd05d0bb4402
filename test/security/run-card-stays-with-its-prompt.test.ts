/**
 * While a card of an attended `airlock run` waits for its answer, nothing the model drives is printed between
 * the card and its answer. The run's log lines (`airlock: → tool`, `airlock: ✗ tool: code: message`) went on
 * being written while the card was on screen: a script that keeps one asking call waiting and makes hundreds
 * of failing calls meanwhile scrolled the real card (`rm -rf …`) off the screen before its question appeared,
 * and the lines right above `allow? [y]once` were then the model's own text (an error message naming a path
 * it chose, padded to wrap like a card of its own). Log lines are held while a card is shown and printed after
 * its answer. A real PTY (util-linux `script`), the scripted provider.
 */
import { expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { airlockRun, runInPty, scriptedDataDir, tempDirs } from "../run-in-pty.ts";

const tempDir = tempDirs();

const TURNS = `turns:
  - tool_calls:
      - name: code_execution__execute
        arguments:
          code: |
            const p = tools.developer__shell({ command: "echo gone > important.txt" });
            for (let i = 0; i < 300; i++) { try { await tools.developer__read_file({ path: "nope" + " ".repeat(60) + "FAKE" }); } catch {} }
            await p;
  - text: "done"
`;

test("the failing calls of a script do not print between the card and its answer", async () => {
  const dir = tempDir("airlock-run-scroll-");
  const ws = scriptedDataDir(dir, TURNS, "provider: { name: scripted, script: turns.yaml }\nmode: smart\n");
  let answered = false;
  const { screen } = await runInPty({
    cmd: airlockRun(dir, "go"),
    cwd: ws,
    killAfterMs: 45_000,
    onScreen: (screen, type) => {
      if (!answered && screen.includes("allow? [y]once")) {
        answered = true;
        setTimeout(() => void type("n\r"), 300);
      }
    },
  });
  const card = screen.indexOf("needs your approval");
  const answer = screen.indexOf("  denied", card);
  expect(card).toBeGreaterThan(-1);
  expect(answer).toBeGreaterThan(card);
  expect(screen.slice(card, answer)).not.toContain("FAKE");
  expect(screen.slice(card, answer)).not.toContain("airlock: ✗");
  expect(screen.slice(answer)).toContain("FAKE"); // the held lines are printed after the answer
  expect(existsSync(join(ws, "important.txt"))).toBe(false);
});
