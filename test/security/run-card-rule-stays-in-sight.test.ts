/**
 * The terminal card of an attended `airlock run` shows the rule `a` would store ("a: allow for this session
 * adds the rule …"). The rule is made from the call (gate/rules/suggest.ts): a shell command's first words, a
 * file tool's absolute path — model-chosen and of any length. A 100 KB program word made a 100 KB rule, so
 * the card was 100 KB long: the tool and the reason it asks scrolled out of sight of the question, past the
 * bounded arguments. A rule that long is not offered (no `a` on that card; `y` and `n` still answer it).
 * A real PTY (`script`), the scripted provider.
 */
import { afterAll, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stringify } from "yaml";

const MAIN = join(import.meta.dir, "..", "..", "src", "main.ts");
const QUESTION = "allow? [y]once";
const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

test("a 100 KB command word cannot make the card's rule line push the card out of sight of its question", async () => {
  const dir = mkdtempSync(join(tmpdir(), "airlock-card-rule-"));
  dirs.push(dir);
  const ws = join(dir, "ws");
  mkdirSync(ws);
  const args = { command: `./${"a".repeat(100_000)} build` };
  writeFileSync(join(dir, "turns.yaml"), stringify({ turns: [{ tool_calls: [{ name: "developer__shell", arguments: args }] }, { text: "done" }] }));
  writeFileSync(join(dir, "airlock.yaml"), stringify({ provider: { name: "scripted", script: "turns.yaml" }, mode: "approve", sandbox: "read-only" }));
  const cmd = `${process.execPath} ${MAIN} run --data-dir ${dir} --workspace ${ws} 'go'`;
  const p = Bun.spawn(["script", "-qec", cmd, "/dev/null"], { cwd: ws, stdin: "pipe", stdout: "pipe", stderr: "pipe", env: { ...process.env, AIRLOCK_HOME: "", NO_COLOR: "1" } });
  const timer = setTimeout(() => p.kill("SIGKILL"), 40_000);
  let screen = "";
  const reader = p.stdout.getReader();
  const dec = new TextDecoder();
  let answered = 0;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    screen += dec.decode(value);
    while (answered < screen.split(QUESTION).length - 1) {
      answered++;
      p.stdin.write("n\n");
      await p.stdin.flush();
    }
  }
  clearTimeout(timer);
  await p.exited;
  const card = screen.indexOf("needs your approval");
  const first = screen.indexOf(QUESTION, card);
  expect(card).toBeGreaterThan(-1);
  expect(first).toBeGreaterThan(card);
  expect(first - card).toBeLessThan(4000);
});
