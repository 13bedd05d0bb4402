/**
 * @module test/e2e/early-http-client.test
 * `airlock run` starts Bun's HTTP client thread before it reads anything (src/cli/early-switch.ts
 * `startHttpClient`, called by src/boot.ts; docs/performance.md, issue 20, twelfth session): the thread exists
 * before the data dir's `airlock.yaml` is opened, the request that starts it connects nowhere but the Unix socket
 * at `/dev/null` (refused: no byte written) — the binary's first network `connect` is still the early request's,
 * to the trusted server — its failure never surfaces (no stderr, no unhandled rejection, exit codes unchanged),
 * and `AIRLOCK_EARLY_REQUEST=0` leaves it out. The binary's system calls are read with `strace` (these tests are
 * skipped without it); the thread itself by its name in `/proc/<pid>/task/<tid>/comm`.
 */
import { describe, expect, test } from "bun:test";
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { removeAfterAllTests } from "../cleanup.ts";
import { startFakeOpenAI, textChunks, type FakeOpenAI } from "../fixtures/fake-openai.ts";
import { compiledBinary, REPO } from "../harness-binary.ts";

/** strace, when it is installed and may trace here (a container without ptrace makes it fail): else null, and the strace tests are skipped. */
const STRACE = ((): string | null => {
  const at = Bun.which("strace", { PATH: "/usr/bin:/bin:/usr/sbin:/sbin" });
  return at !== null && Bun.spawnSync([at, "-qq", "-o", "/dev/null", "/bin/true"]).exitCode === 0 ? at : null;
})();

/** A temp home with a data dir configured for `fake` (the tokens a first run creates included) and a workspace. */
function place(fake: FakeOpenAI): { dir: string; data: string; ws: string } {
  const dir = mkdtempSync(join(tmpdir(), "airlock-early-http-"));
  removeAfterAllTests(dir);
  const data = join(dir, "data");
  const ws = join(dir, "ws");
  mkdirSync(data, { mode: 0o700 });
  mkdirSync(ws);
  writeFileSync(join(data, "airlock.yaml"), `provider:\n  name: openai\n  model: m\n  base_url: ${fake.url}\n  api_key_env: BENCH_KEY\n`);
  writeFileSync(join(data, "approver-token"), "a".repeat(64), { mode: 0o600 });
  writeFileSync(join(data, "api-token"), "b".repeat(64), { mode: 0o600 });
  return { dir, data, ws };
}

/** `airlock run hi` under `strace -f` (connect, openat, prctl, clone, clone3): exit code, stderr, and the trace's lines. */
async function tracedRun(bin: string, p: { dir: string; data: string; ws: string }, env: Record<string, string> = {}): Promise<{ code: number; stderr: string; trace: string[] }> {
  const log = join(p.dir, `strace-${Math.random().toString(36).slice(2)}.log`);
  const proc = Bun.spawn([STRACE!, "-f", "-qq", "-e", "trace=connect,openat,prctl,clone,clone3", "-o", log, bin, "run", "hi", "--headless", "--data-dir", p.data, "--workspace", p.ws], {
    cwd: p.ws,
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
    env: { PATH: "/usr/bin:/bin", HOME: p.dir, BENCH_KEY: "k", ...env },
  });
  const [code, , stderr] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  return { code, stderr, trace: joined(readFileSync(log, "utf8").split("\n")) };
}

/** strace's lines with each call a thread left `<unfinished ...>` joined to its `<... NAME resumed>` line (`-f` writes both). */
function joined(lines: string[]): string[] {
  const out: string[] = [];
  const pending = new Map<string, number>();
  for (const l of lines) {
    const pid = l.split(/\s+/)[0]!;
    const resumed = /<\.\.\. \w+ resumed>(.*)$/.exec(l);
    const at = pending.get(pid);
    if (resumed && at !== undefined) {
      out[at] = out[at]!.replace(/ <unfinished \.\.\.>$/, resumed[1]!);
      pending.delete(pid);
      continue;
    }
    if (l.endsWith("<unfinished ...>")) pending.set(pid, out.length);
    out.push(l);
  }
  return out;
}

/** The index of the first trace line matching `re`, or -1. */
const first = (trace: string[], re: RegExp) => trace.findIndex((l) => re.test(l));
/** The trace's `connect` calls, each as `family address` (`AF_UNIX /dev/null`, `AF_INET 127.0.0.1:PORT`). */
function connects(trace: string[]): string[] {
  const out: string[] = [];
  for (const l of trace) {
    const m = /connect\(\d+, \{sa_family=(AF_\w+), (?:sun_path="([^"]*)"|sin_port=htons\((\d+)\), sin_addr=inet_addr\("([^"]+)"\)|.*?)/.exec(l);
    if (m) out.push(m[2] !== undefined ? `${m[1]} ${m[2]}` : m[3] !== undefined ? `${m[1]} ${m[4]}:${m[3]}` : `${m[1]} ?`);
  }
  return out;
}

describe.skipIf(STRACE === null)("airlock run's HTTP client thread, started early (strace)", () => {
  test("starts before airlock.yaml is opened; the only connects are the refused /dev/null one and the early request's to its server; nothing on stderr", async () => {
    const bin = await compiledBinary();
    const fake = startFakeOpenAI(() => textChunks("ok"));
    try {
      const p = place(fake);
      const port = new URL(fake.url).port;
      // the first run writes the cache (a miss: nothing early); the second sends its request early
      const cold = await tracedRun(bin, p);
      const warm = await tracedRun(bin, p);
      for (const r of [cold, warm]) {
        expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" });
        // the thread names itself whenever it is scheduled: its creation (the clone that returned its id) is what counts
        const named = r.trace.find((l) => /prctl\(PR_SET_NAME, "HTTP Client"/.test(l));
        expect(named).toBeDefined();
        const tid = named!.split(/\s+/)[0]!;
        const created = first(r.trace, new RegExp(`clone3?\\(.*= ${tid}$`));
        const config = first(r.trace, /openat\(.*\/data\/airlock\.yaml"/);
        expect(created).toBeGreaterThanOrEqual(0);
        expect(config).toBeGreaterThan(created);
        const refused = r.trace.filter((l) => /connect\(.*"\/dev\/null"/.test(l));
        expect(refused).toHaveLength(1);
        expect(refused[0]).toMatch(/= -1 ECONNREFUSED/);
        // every connect: the refused one first, then only the server's (the SDK may open a second connection on the cold run)
        const all = connects(r.trace);
        expect(all[0]).toBe("AF_UNIX /dev/null");
        expect(new Set(all.slice(1))).toEqual(new Set([`AF_INET 127.0.0.1:${port}`]));
      }
      expect(fake.requests.length).toBe(2);
    } finally {
      await fake.close();
    }
  }, 120_000);

  test("AIRLOCK_EARLY_REQUEST=0 leaves it out: no /dev/null connect", async () => {
    const bin = await compiledBinary();
    const fake = startFakeOpenAI(() => textChunks("ok"));
    try {
      const p = place(fake);
      const r = await tracedRun(bin, p, { AIRLOCK_EARLY_REQUEST: "0" });
      expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" });
      expect(connects(r.trace).filter((c) => c.startsWith("AF_UNIX /dev/null"))).toEqual([]);
    } finally {
      await fake.close();
    }
  }, 120_000);

  test("a run refused before any request (a data dir others may write): exit 2, its one error line, no trace of the start request on stderr", async () => {
    const bin = await compiledBinary();
    const fake = startFakeOpenAI(() => textChunks("ok"));
    try {
      const p = place(fake);
      chmodSync(p.data, 0o777);
      const r = await tracedRun(bin, p);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain("data_dir_unusable");
      expect(r.stderr.trim().split("\n")).toHaveLength(1);
      expect(r.stderr).not.toMatch(/ECONNREFUSED|dev\/null|unhandled/i);
      expect(fake.requests.length).toBe(0);
      expect(connects(r.trace).every((c) => c === "AF_UNIX /dev/null")).toBe(true);
    } finally {
      await fake.close();
    }
  }, 120_000);
});

/** A fresh Bun process that calls `startHttpClient(env)`, then prints its threads' names (one a line). */
async function threadsAfterStart(env: Record<string, string>): Promise<{ code: number; stderr: string; threads: string[] }> {
  const script = [
    `import { startHttpClient } from ${JSON.stringify(join(REPO, "src", "cli", "early-switch.ts"))};`,
    `import { readdirSync, readFileSync } from "node:fs";`,
    `startHttpClient(${JSON.stringify(env)});`,
    `await Bun.sleep(200);`,
    `for (const t of readdirSync("/proc/self/task")) console.log(readFileSync("/proc/self/task/" + t + "/comm", "utf8").trim());`,
  ].join("\n");
  const proc = Bun.spawn([process.execPath, "-e", script], { stdin: "ignore", stdout: "pipe", stderr: "pipe", env: { PATH: "/usr/bin:/bin" } });
  const [code, stdout, stderr] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  return { code, stderr, threads: stdout.trim().split("\n") };
}

describe("startHttpClient", () => {
  test("starts Bun's HTTP client thread; its refused request is no error, no output, no unhandled rejection", async () => {
    const r = await threadsAfterStart({});
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" });
    expect(r.threads).toContain("HTTP Client");
  });

  test("does nothing when the early request is switched off", async () => {
    const r = await threadsAfterStart({ AIRLOCK_EARLY_REQUEST: "off" });
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" });
    expect(r.threads).not.toContain("HTTP Client");
  });
});
