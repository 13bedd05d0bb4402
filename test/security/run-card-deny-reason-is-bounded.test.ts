/**
 * `n REASON` at the terminal card of an attended `airlock run` tells the model REASON. Over HTTP a decision's
 * reason is at most 2,000 characters (routes/actions.ts); the terminal took any length, so a paste (a log, a
 * file) went whole into the card's row, the audit log and the model's context. A reason over 2,000 characters
 * is refused there too: the person is asked again. A real PTY (`script`).
 */
import { afterAll, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const MAIN = join(import.meta.dir, "..", "..", "src", "main.ts");
const QUESTION = "allow? [y]once";
const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

test("n with a reason over 2,000 characters asks again; a short one is told to the model", async () => {
  const dir = mkdtempSync(join(tmpdir(), "airlock-card-reason-len-"));
  dirs.push(dir);
  const ws = join(dir, "ws");
  mkdirSync(ws);
  writeFileSync(join(dir, "turns.yaml"), `turns:\n  - tool_calls: [{ name: developer__shell, arguments: { command: "touch a.txt" } }]\n  - text: done\n`);
  writeFileSync(join(dir, "airlock.yaml"), "provider: { name: scripted, script: turns.yaml }\nmode: approve\nsandbox: read-only\n");
  const cmd = `${process.execPath} ${MAIN} run --data-dir ${dir} --workspace ${ws} 'go'`;
  const p = Bun.spawn(["script", "-qec", cmd, "/dev/null"], { cwd: ws, stdin: "pipe", stdout: "pipe", stderr: "pipe", env: { ...process.env, AIRLOCK_HOME: "", NO_COLOR: "1" } });
  const timer = setTimeout(() => p.kill("SIGKILL"), 40_000);
  const answers = [`n ${"x".repeat(3000)}END\n`, "n short\n"];
  let screen = "";
  const reader = p.stdout.getReader();
  const dec = new TextDecoder();
  let answered = 0;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    screen += dec.decode(value);
    while (answered < screen.split(QUESTION).length - 1) {
      p.stdin.write(answers[answered] ?? "n\n");
      answered++;
      await p.stdin.flush();
    }
  }
  clearTimeout(timer);
  await p.exited;
  expect(answered).toBe(2); // asked again after the long reason
  expect(screen).not.toContain("xxxxEND)");
  expect(screen).toContain("denied (the model is told: short)");
});
