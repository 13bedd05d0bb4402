/**
 * While a card of an attended `airlock run` waits for its answer, nothing the model drives is printed between
 * the card and its answer. The run's log lines (`airlock: → tool`, `airlock: ✗ tool: code: message`) went on
 * being written while the card was on screen: a script that keeps one asking call waiting and makes hundreds
 * of failing calls meanwhile scrolled the real card (`rm -rf …`) off the screen before its question appeared,
 * and the lines right above `allow? [y]once` were then the model's own text (an error message naming a path
 * it chose, padded to wrap like a card of its own). Log lines are held while a card is shown and printed after
 * its answer. A real PTY (util-linux `script`), the scripted provider.
 */
import { afterAll, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const MAIN = join(import.meta.dir, "..", "..", "src", "main.ts");
const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

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
  const dir = mkdtempSync(join(tmpdir(), "airlock-run-scroll-"));
  dirs.push(dir);
  const ws = join(dir, "ws");
  mkdirSync(ws);
  writeFileSync(join(dir, "turns.yaml"), TURNS);
  writeFileSync(join(dir, "airlock.yaml"), "provider: { name: scripted, script: turns.yaml }\nmode: smart\n");
  const cmd = `${process.execPath} ${MAIN} run --data-dir ${dir} 'go'`;
  const p = Bun.spawn(["script", "-qec", cmd, "/dev/null"], { cwd: ws, stdin: "pipe", stdout: "pipe", stderr: "pipe", env: { ...process.env, AIRLOCK_HOME: "" } });
  const timer = setTimeout(() => p.kill("SIGKILL"), 45_000);
  let screen = "";
  const reader = p.stdout.getReader();
  const dec = new TextDecoder();
  let answered = false;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    screen += dec.decode(value);
    if (!answered && screen.includes("allow? [y]once")) {
      answered = true;
      setTimeout(() => {
        p.stdin.write("n\r");
        void p.stdin.flush();
      }, 300);
    }
  }
  clearTimeout(timer);
  await p.exited;
  const card = screen.indexOf("needs your approval");
  const answer = screen.indexOf("  denied", card);
  expect(card).toBeGreaterThan(-1);
  expect(answer).toBeGreaterThan(card);
  expect(screen.slice(card, answer)).not.toContain("FAKE");
  expect(screen.slice(card, answer)).not.toContain("airlock: ✗");
  expect(screen.slice(answer)).toContain("FAKE"); // the held lines are printed after the answer
  expect(existsSync(join(ws, "important.txt"))).toBe(false);
});
