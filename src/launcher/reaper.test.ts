import { afterAll, describe, expect, test } from "bun:test";
import { readFileSync, realpathSync } from "node:fs";
import { join } from "node:path";

const CHILD = join(import.meta.dir, "../../test/fixtures/reaper-child.ts");
const START = join(import.meta.dir, "../../test/fixtures/reaper-start.ts");
const started: number[] = [];
afterAll(() => {
  for (const pid of started) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // gone already
    }
  }
});

/** True while `pid` runs (not a zombie). */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return !"ZX".includes(stat[stat.lastIndexOf(")") + 2]!);
  } catch {
    return false;
  }
}

async function waitDead(pid: number): Promise<boolean> {
  for (let waited = 0; alive(pid) && waited < 20_000; waited += 20) await Bun.sleep(20);
  return !alive(pid);
}

async function startChild(seconds: string, mode: "wait" | "end"): Promise<{ proc: Bun.Subprocess<"ignore", "pipe", "inherit">; pids: { reaper: number; holder: number; other: number } }> {
  const proc = Bun.spawn([process.execPath, CHILD, seconds, mode], { stdout: "pipe", stderr: "inherit", stdin: "ignore" });
  const line = (await new Response(proc.stdout).text().then((t) => t)).split("\n")[0]!;
  const pids = JSON.parse(line) as { reaper: number; holder: number; other: number };
  started.push(pids.holder, pids.other, pids.reaper);
  return { proc, pids };
}

describe("launcher/reaper", () => {
  test("when its airlock process is SIGKILLed, the reaper kills every process holding the mark, and only those", async () => {
    const proc = Bun.spawn([process.execPath, CHILD, "61.7", "wait"], { stdout: "pipe", stderr: "inherit", stdin: "ignore" });
    const reader = proc.stdout.getReader();
    const { value } = await reader.read();
    const pids = JSON.parse(new TextDecoder().decode(value).split("\n")[0]!) as { reaper: number; holder: number; other: number };
    started.push(pids.holder, pids.other, pids.reaper);
    expect([alive(pids.reaper), alive(pids.holder), alive(pids.other)]).toEqual([true, true, true]);
    proc.kill("SIGKILL");
    await proc.exited;
    expect(await waitDead(pids.holder)).toBe(true);
    expect(await waitDead(pids.reaper)).toBe(true);
    expect(alive(pids.other)).toBe(true);
  });

  test("the reaper keeps no airlock process alive: one that ends, ends (and its reaper then kills the mark's holders)", async () => {
    const { proc, pids } = await startChild("61.8", "end");
    expect(await proc.exited).toBe(0);
    expect(await waitDead(pids.holder)).toBe(true);
    expect(await waitDead(pids.reaper)).toBe(true);
    expect(alive(pids.other)).toBe(true);
  });

  test("when /bin/sh cannot be executed, asking for the mark throws (launches are refused) and airlock keeps running", async () => {
    // /bin/sh replaced by /dev/null (not executable) in a mount namespace of bubblewrap's own; the rest is the host
    const sh = realpathSync("/bin/sh");
    const proc = Bun.spawn(["bwrap", "--dev-bind", "/", "/", "--ro-bind", "/dev/null", sh, "--", process.execPath, START], { stdout: "pipe", stderr: "pipe", stdin: "ignore" });
    const [code, out, err] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
    const lines = out.trim().split("\n").map((l) => JSON.parse(l) as Record<string, unknown>);
    expect({ code, lines, err }).toEqual({ code: 0, lines: [{ threw: expect.stringContaining("/bin/sh") }, { threw: expect.stringContaining("/bin/sh") }, { alive: true }], err: "" });
  });
});
