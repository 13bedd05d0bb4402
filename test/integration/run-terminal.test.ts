/**
 * `airlock run` without --headless: who can answer an ask. With a terminal (a real PTY made by
 * util-linux `script`), the person at it answers; without one, the run is headless and refuses at
 * once. And stdin is read only for PROMPT "-", so a pipe that never closes never blocks a run.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const MAIN = join(import.meta.dir, "..", "..", "src", "main.ts");
const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

function setup(): { dir: string; ws: string } {
  const dir = mkdtempSync(join(tmpdir(), "airlock-term-"));
  dirs.push(dir);
  const ws = join(dir, "ws");
  mkdirSync(ws);
  writeFileSync(
    join(dir, "turns.yaml"),
    'turns:\n  - tool_calls:\n      - name: developer__shell\n        arguments: { command: "echo hi > out.txt" }\n  - text: "done"\n',
  );
  writeFileSync(join(dir, "airlock.yaml"), "provider: { name: scripted, script: turns.yaml }\nmode: smart\n");
  return { dir, ws };
}

/** Runs `airlock run` inside a PTY (util-linux `script`), typing `answer` once the question is on screen. */
async function runInPty(dir: string, ws: string, answer: string): Promise<{ code: number; screen: string }> {
  const cmd = `${process.execPath} ${MAIN} run --data-dir ${dir} 'write it'`;
  const p = Bun.spawn(["script", "-qec", cmd, "/dev/null"], { cwd: ws, stdin: "pipe", stdout: "pipe", stderr: "pipe", env: { ...process.env, AIRLOCK_HOME: "" } });
  let screen = "";
  const reader = p.stdout.getReader();
  const dec = new TextDecoder();
  let typed = false;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    screen += dec.decode(value);
    if (!typed && screen.includes("allow once? [y/N]")) {
      typed = true;
      p.stdin.write(`${answer}\n`);
      await p.stdin.flush();
    }
  }
  return { code: await p.exited, screen };
}

describe("airlock run: the person at the terminal answers", () => {
  test("y allows the call once; the question names the tool and the reason", async () => {
    const { dir, ws } = setup();
    const { code, screen } = await runInPty(dir, ws, "y");
    expect(screen).toContain("developer__shell needs your approval");
    expect(screen).toContain("allowed once");
    expect(code).toBe(0);
    expect(existsSync(join(ws, "out.txt"))).toBe(true);
  });

  test("anything else denies it; the tool does not run", async () => {
    const { dir, ws } = setup();
    const { code, screen } = await runInPty(dir, ws, "n");
    expect(screen).toContain("denied");
    expect(code).toBe(0); // the model got an error result and answered anyway
    expect(existsSync(join(ws, "out.txt"))).toBe(false);
  });
});

describe("airlock run without a terminal", () => {
  test("without --headless and no TTY, an ask is refused at once (no wait for a TTL)", async () => {
    const { dir, ws } = setup();
    const p = Bun.spawn([process.execPath, MAIN, "run", "--data-dir", dir, "--output-format", "json", "write it"], {
      cwd: ws,
      stdin: "pipe", // a pipe that is never closed: it must not block the run
      stdout: "pipe",
      stderr: "pipe",
      env: { ...process.env, AIRLOCK_HOME: "" },
    });
    const [code, out, err] = await Promise.all([p.exited, new Response(p.stdout).text(), new Response(p.stderr).text()]);
    expect(code).toBe(0);
    const result = JSON.parse(out);
    expect(result.refused_calls).toEqual([expect.objectContaining({ tool: "developer__shell", code: "no_human_surface" })]);
    expect(err).toContain("no terminal to ask on");
    expect(existsSync(join(ws, "out.txt"))).toBe(false);
  });

  test("PROMPT '-' reads the prompt from stdin", async () => {
    const { dir, ws } = setup();
    const p = Bun.spawn([process.execPath, MAIN, "run", "--data-dir", dir, "--output-format", "json", "-"], {
      cwd: ws,
      stdin: new TextEncoder().encode("from stdin\n"),
      stdout: "pipe",
      stderr: "pipe",
      env: { ...process.env, AIRLOCK_HOME: "" },
    });
    const [code, out] = await Promise.all([p.exited, new Response(p.stdout).text()]);
    expect(code).toBe(0);
    const { Store } = await import("../../src/store/store.ts");
    const store = await Store.open(join(dir, "airlock.db"));
    const first = (await store.listMessages(JSON.parse(out).session_id))[0];
    store.close();
    expect(first).toMatchObject({ role: "user", content: "from stdin" });
  });
});
