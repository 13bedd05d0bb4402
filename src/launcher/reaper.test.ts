import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { killPids } from "../../test/cleanup.ts";

const CHILD = join(import.meta.dir, "../../test/fixtures/reaper-child.ts");
const START = join(import.meta.dir, "../../test/fixtures/reaper-start.ts");
const FUSE = join(import.meta.dir, "../../test/fixtures/stalling-fuse.ts");
const IS_ROOT = process.getuid?.() === 0;
const started: number[] = [];
afterAll(() => killPids(started));

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

  // mounting FUSE needs root here; an unprivileged user does the same through setuid `fusermount`
  test.skipIf(!IS_ROOT)("a process of anyone's with a file open on a file system that never answers does not hang the reaper", async () => {
    const dir = mkdtempSync(join(tmpdir(), "airlock-stall-"));
    const fuse = Bun.spawn(["unshare", "-m", "--propagation", "private", process.execPath, FUSE, dir], { stdout: "pipe", stderr: "inherit", stdin: "ignore" });
    try {
      const reader = fuse.stdout.getReader();
      const { value } = await reader.read();
      const { holder: stalled } = JSON.parse(new TextDecoder().decode(value).split("\n")[0]!) as { holder: number };
      started.push(stalled);
      // its fd 0 is on the stalling file once it runs `sleep`
      while (!readFileSync(`/proc/${stalled}/cmdline`, "utf8").startsWith("sleep")) await Bun.sleep(20);
      const proc = Bun.spawn([process.execPath, CHILD, "61.9", "wait"], { stdout: "pipe", stderr: "inherit", stdin: "ignore" });
      const out = proc.stdout.getReader();
      const first = await out.read();
      const pids = JSON.parse(new TextDecoder().decode(first.value).split("\n")[0]!) as { reaper: number; holder: number; other: number };
      started.push(pids.holder, pids.other, pids.reaper);
      proc.kill("SIGKILL");
      await proc.exited;
      expect({ holder: await waitDead(pids.holder), reaper: await waitDead(pids.reaper) }).toEqual({ holder: true, reaper: true });
      expect([alive(pids.other), alive(stalled)]).toEqual([true, true]);
    } finally {
      // its requests end (ENOTCONN) with it, and its mount with its mount namespace
      fuse.kill("SIGKILL");
      await fuse.exited;
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);

  test("two airlock processes: one's reaper kills its own launches, never the other's", async () => {
    const start = async (seconds: string) => {
      const proc = Bun.spawn([process.execPath, CHILD, seconds, "wait"], { stdout: "pipe", stderr: "inherit", stdin: "ignore" });
      const { value } = await proc.stdout.getReader().read();
      const pids = JSON.parse(new TextDecoder().decode(value).split("\n")[0]!) as { reaper: number; holder: number; other: number };
      started.push(pids.holder, pids.other, pids.reaper);
      return { proc, pids };
    };
    const a = await start("62.1");
    const b = await start("62.2");
    a.proc.kill("SIGKILL");
    await a.proc.exited;
    expect({ holder: await waitDead(a.pids.holder), reaper: await waitDead(a.pids.reaper) }).toEqual({ holder: true, reaper: true });
    // A's reaper has ended: whatever it could have killed, it has
    expect([alive(b.pids.holder), alive(b.pids.reaper), alive(b.pids.other)]).toEqual([true, true, true]);
    b.proc.kill("SIGKILL");
    await b.proc.exited;
    expect({ holder: await waitDead(b.pids.holder), reaper: await waitDead(b.pids.reaper) }).toEqual({ holder: true, reaper: true });
  });

  test("the reaper writes once on its stdout, stderr and fd 4 and closes them (the output path a first launch would run cold), keeping stdin and the mark", async () => {
    const proc = Bun.spawn([process.execPath, CHILD, "63.1", "wait"], { stdout: "pipe", stderr: "inherit", stdin: "ignore" });
    const { value } = await proc.stdout.getReader().read();
    const pids = JSON.parse(new TextDecoder().decode(value).split("\n")[0]!) as { reaper: number; holder: number; other: number };
    started.push(pids.holder, pids.other, pids.reaper);
    const fds = (): string[] => {
      try {
        return readdirSync(`/proc/${pids.reaper}/fd`).sort();
      } catch {
        return [];
      }
    };
    try {
      // it closes them as it starts: wait for that (a condition, with a deadline), then look
      for (let waited = 0; waited < 20_000 && ["1", "2", "4"].some((fd) => fds().includes(fd)); waited += 20) await Bun.sleep(20);
      const open = fds();
      expect({ alive: alive(pids.reaper), stdout: open.includes("1"), stderr: open.includes("2"), fd4: open.includes("4") }).toEqual({ alive: true, stdout: false, stderr: false, fd4: false });
      expect({ stdin: open.includes("0"), mark: open.includes("3") }).toEqual({ stdin: true, mark: true });
    } finally {
      // and it still does its work: airlock killed, the mark's holder dies with the reaper
      proc.kill("SIGKILL");
      await proc.exited;
    }
    expect({ holder: await waitDead(pids.holder), reaper: await waitDead(pids.reaper) }).toEqual({ holder: true, reaper: true });
  });

  test("asked again, the same mark and the same reaper: one reaper per airlock process", async () => {
    const proc = Bun.spawn([process.execPath, START], { stdout: "pipe", stderr: "pipe", stdin: "ignore" });
    const [code, out] = await Promise.all([proc.exited, new Response(proc.stdout).text()]);
    const lines = out.trim().split("\n").map((l) => JSON.parse(l) as { mark?: number; reaper?: number });
    started.push(lines[0]!.reaper!);
    expect(code).toBe(0);
    expect(typeof lines[0]!.mark).toBe("number");
    expect(typeof lines[0]!.reaper).toBe("number");
    expect(lines[1]).toEqual(lines[0]!);
    // the process ended normally with no launch: its reaper finds no holder and ends too
    expect(await waitDead(lines[0]!.reaper!)).toBe(true);
  });
});
