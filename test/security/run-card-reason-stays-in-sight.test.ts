/**
 * The terminal card of an attended `airlock run` bounds its arguments (20 lines / 2,000 characters) so the
 * tool and the reason it asks stay in sight of the question (SPEC §2). The reason was not bounded, and part of it
 * is model-written: an elevation's `justification` ("asks to run this one call under sandbox
 * "danger-full-access" …: JUSTIFICATION"). A 100 KB justification of one line made the card hundreds of
 * screens long: the sandbox asked for scrolled out of sight, the person saw the justification's last words
 * (model text), a cut argument list and `developer__shell ls -la` right above `allow?`. A real PTY (`script`).
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

test("an elevation's 100 KB justification cannot push the sandbox it asks for out of sight of the question", async () => {
  const dir = mkdtempSync(join(tmpdir(), "airlock-card-reason-"));
  dirs.push(dir);
  const ws = join(dir, "ws");
  mkdirSync(ws);
  const justification = `${"the listing is needed to find the build output, ".repeat(2100)}so this only lists the folder, read-only`;
  const args = { justification, sandbox_permissions: "danger-full-access", command: "ls -la" };
  writeFileSync(join(dir, "turns.yaml"), stringify({ turns: [{ tool_calls: [{ name: "developer__shell", arguments: args }] }, { text: "done" }] }));
  writeFileSync(join(dir, "airlock.yaml"), stringify({ provider: { name: "scripted", script: "turns.yaml" }, mode: "smart", sandbox: "read-only" }));
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
      p.stdin.write(answered === 1 ? "v\n" : "n\n");
      await p.stdin.flush();
    }
  }
  clearTimeout(timer);
  await p.exited;
  const card = screen.indexOf("needs your approval");
  const first = screen.indexOf(QUESTION, card);
  expect(card).toBeGreaterThan(-1);
  expect(first).toBeGreaterThan(card);
  // the card up to its question fits a screen (as its bounded arguments do), and says which sandbox is asked for
  expect(first - card).toBeLessThan(4000);
  expect(screen.slice(card, first)).toContain('sandbox "danger-full-access"');
  // v shows the whole reason
  const second = screen.indexOf(QUESTION, first + 1);
  expect(second).toBeGreaterThan(first);
  expect(screen.slice(first, second)).toContain("so this only lists the folder, read-only");
});

test("a 100 KB path cannot make the card's will_fail line push the card out of sight of its question", async () => {
  const dir = mkdtempSync(join(tmpdir(), "airlock-card-willfail-"));
  dirs.push(dir);
  const ws = join(dir, "ws");
  mkdirSync(ws);
  const args = { path: `${"d/".repeat(50_000)}f.txt`, content: "x" };
  writeFileSync(join(dir, "turns.yaml"), stringify({ turns: [{ tool_calls: [{ name: "developer__write_file", arguments: args }] }, { text: "done" }] }));
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
  expect(screen.slice(card, first)).toContain("allowing this will not help");
  expect(first - card).toBeLessThan(4000);
});
