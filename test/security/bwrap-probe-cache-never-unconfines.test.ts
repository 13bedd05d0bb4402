/**
 * bubblewrap's availability probe is remembered in the data dir (src/launcher/probe.ts `useProbeCache`),
 * so a new process's first confined call does not run a whole extra bwrap first. The cache is trusted only
 * for the same bwrap file, boot, user and sysctls; a stale or tampered cache re-probes; a failed probe is
 * never cached; and even a forged "works" for a bubblewrap that cannot run never lets a call run
 * unconfined (it only skips the probe, and the call fails under bubblewrap). As root and as nobody.
 */
import { describe, expect, test } from "bun:test";
import { chmodSync, existsSync, readFileSync, statSync, symlinkSync, unlinkSync, utimesSync, writeFileSync, mkdirSync, renameSync } from "node:fs";
import { dirname, join } from "node:path";
import { findInPath } from "../../src/launcher/resolve.ts";
import { PROBE_CACHE_FILE } from "../../src/launcher/probe.ts";
import { sharedTempDir, testUsers, type TestUser } from "../as-user.ts";

const REPO = join(import.meta.dir, "..", "..");
const BWRAP = findInPath("bwrap", process.env.PATH)!;

/** Runs `body` (module code with PROBE, DIR and BWRAP in scope) in a fresh bun process as `user`; returns its stdout, trimmed. */
async function inFreshProcess(user: TestUser, dir: string, bwrap: string, body: string): Promise<string> {
  const code =
    `import * as PROBE from ${JSON.stringify(join(REPO, "src/launcher/probe.ts"))};\n` +
    `import { launch } from ${JSON.stringify(join(REPO, "src/launcher/spawn.ts"))};\n` +
    `import { Config } from ${JSON.stringify(join(REPO, "src/config/schema.ts"))};\n` +
    `const DIR = ${JSON.stringify(dir)}, BWRAP = ${JSON.stringify(bwrap)};\n` +
    `void launch; void Config;\n${body}\n`;
  const file = join(dir, `probe-${Math.random().toString(36).slice(2)}.ts`);
  writeFileSync(file, code, { mode: 0o644 });
  const proc = Bun.spawn([...user.prefix, process.execPath, file], { cwd: dir, stdout: "pipe", stderr: "pipe", env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: dir } });
  const [exit, out, err] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  if (exit !== 0) throw new Error(`fresh process exited ${exit}: ${err}`);
  return out.trim();
}

/** A bubblewrap wrapper that logs each run to `<dir>/runs.log`, then runs the real one (or fails when `broken`). */
function wrapper(dir: string, name: string, broken = false): string {
  const file = join(dir, name);
  writeFileSync(file, broken ? `#!/bin/sh\necho run >> ${dir}/runs.log\nexit 1\n` : `#!/bin/sh\necho run >> ${dir}/runs.log\nexec ${BWRAP} "$@"\n`, { mode: 0o755 });
  chmodSync(file, 0o755);
  return file;
}

const runs = (dir: string) => (existsSync(join(dir, "runs.log")) ? readFileSync(join(dir, "runs.log"), "utf8").split("\n").filter(Boolean).length : 0);
const probeOnce = "PROBE.useProbeCache(DIR + '/data'); console.log(await PROBE.bwrapAvailable(BWRAP));";

for (const user of testUsers()) {
  describe(`probe cache, as ${user.name}`, () => {
    function setUp(broken = false): { dir: string; data: string; bwrap: string } {
      const dir = sharedTempDir("airlock-probe-cache-");
      const data = join(dir, "data");
      mkdirSync(data, { mode: 0o700 });
      if (user.uid !== process.getuid?.()) Bun.spawnSync(["chown", `${user.uid}:${user.uid}`, data]);
      return { dir, data, bwrap: wrapper(dir, "bwrap", broken) };
    }

    test("a success is remembered: a second process runs no probe; a changed bwrap file re-probes", async () => {
      const { dir, data, bwrap } = setUp();
      expect(await inFreshProcess(user, dir, bwrap, probeOnce)).toBe("true");
      expect(runs(dir)).toBe(1);
      const st = statSync(join(data, PROBE_CACHE_FILE));
      expect(st.mode & 0o777).toBe(0o600);
      expect(st.uid).toBe(user.uid);
      expect(await inFreshProcess(user, dir, bwrap, probeOnce)).toBe("true");
      expect(runs(dir)).toBe(1);
      // the bwrap file changes (mtime): re-probed
      utimesSync(bwrap, new Date(), new Date(Date.now() - 60_000));
      expect(await inFreshProcess(user, dir, bwrap, probeOnce)).toBe("true");
      expect(runs(dir)).toBe(2);
      // another bwrap file at the same path (another inode): re-probed
      const other = wrapper(dir, "bwrap.new");
      renameSync(other, bwrap);
      expect(await inFreshProcess(user, dir, bwrap, probeOnce)).toBe("true");
      expect(runs(dir)).toBe(3);
    }, 120_000);

    test("a tampered cache is a miss: another boot id, a group-writable file, a symlink, garbage", async () => {
      const { dir, data, bwrap } = setUp();
      const cache = join(data, PROBE_CACHE_FILE);
      expect(await inFreshProcess(user, dir, bwrap, probeOnce)).toBe("true");
      const good = readFileSync(cache, "utf8");
      let expected = 1;
      const tamper = async (write: () => void) => {
        write();
        expect(await inFreshProcess(user, dir, bwrap, probeOnce)).toBe("true");
        expect(runs(dir)).toBe(++expected);
      };
      const saved = JSON.parse(good) as { fingerprint: string };
      const fp = JSON.parse(saved.fingerprint) as Record<string, unknown>;
      await tamper(() => writeFileSync(cache, JSON.stringify({ fingerprint: JSON.stringify({ ...fp, boot_id: "00000000-0000-0000-0000-000000000000" }), works: true })));
      await tamper(() => writeFileSync(cache, JSON.stringify({ fingerprint: JSON.stringify({ ...fp, sysctls: ["1", "0", "0", "0", "0", "0"] }), works: true })));
      await tamper(() => {
        writeFileSync(cache, good);
        chmodSync(cache, 0o664);
      });
      await tamper(() => {
        unlinkSync(cache);
        writeFileSync(join(dir, "elsewhere.json"), good, { mode: 0o600 });
        if (user.uid !== process.getuid?.()) Bun.spawnSync(["chown", `${user.uid}:${user.uid}`, join(dir, "elsewhere.json")]);
        symlinkSync(join(dir, "elsewhere.json"), cache);
      });
      await tamper(() => {
        unlinkSync(cache);
        writeFileSync(cache, "{not json", { mode: 0o600 });
        if (user.uid !== process.getuid?.()) Bun.spawnSync(["chown", `${user.uid}:${user.uid}`, cache]);
      });
    }, 120_000);

    test("a failed probe is never cached, and a forged 'works' for a bwrap that cannot run never runs a call unconfined", async () => {
      const { dir, data, bwrap } = setUp(true);
      const marker = join(dir, "ran-unconfined");
      const call =
        `PROBE.useProbeCache(DIR + '/data');\n` +
        `const r = await launch({ policy: "workspace-write", argv: ["sh", "-c", "touch ${marker}"], cwd: DIR, workspace: DIR, timeoutMs: 30000, maxOutputBytes: 65536, config: Config.parse({ allow_unenforced: true }), bwrapPath: BWRAP }).catch((e) => ({ error: e.code }));\n` +
        `console.log(JSON.stringify(r));`;
      expect(await inFreshProcess(user, dir, bwrap, probeOnce)).toBe("false");
      expect(existsSync(join(data, PROBE_CACHE_FILE))).toBe(false);
      // forge a cache that matches this bwrap exactly
      const fingerprint = await inFreshProcess(user, dir, bwrap, "console.log(PROBE.probeFingerprint(BWRAP));");
      writeFileSync(join(data, PROBE_CACHE_FILE), JSON.stringify({ fingerprint, works: true }), { mode: 0o600 });
      if (user.uid !== process.getuid?.()) Bun.spawnSync(["chown", `${user.uid}:${user.uid}`, join(data, PROBE_CACHE_FILE)]);
      const before = runs(dir);
      const r = JSON.parse(await inFreshProcess(user, dir, bwrap, call)) as { unconfined?: boolean; exit_code?: number | null; error?: string };
      expect(runs(dir)).toBe(before + 1); // no probe: the one run is the call itself, under (broken) bubblewrap
      expect(r.unconfined).not.toBe(true);
      expect(r.exit_code === 0).toBe(false);
      expect(existsSync(marker)).toBe(false);
    }, 120_000);
  });
}

describe("the runtime's warm-up", () => {
  test("starting a runtime runs no process; with the cache warm its first confined call runs one bwrap (the call), without it two (probe, call)", async () => {
    const dir = sharedTempDir("airlock-probe-warm-");
    mkdirSync(join(dir, "bin"));
    mkdirSync(join(dir, "ws"));
    mkdirSync(join(dir, "data"), { mode: 0o700 });
    const bwrap = wrapper(join(dir, "bin"), "bwrap");
    const log = join(dir, "bin", "runs.log");
    const count = () => (existsSync(log) ? readFileSync(log, "utf8").split("\n").filter(Boolean).length : 0);
    // the warm-up reads the cache of the data dir's real path; the second start finds the first one's
    const script = join(dir, "warm.ts");
    writeFileSync(
      script,
      `import { createRuntime } from ${JSON.stringify(join(REPO, "src/runtime.ts"))};\n` +
        `import { launch } from ${JSON.stringify(join(REPO, "src/launcher/spawn.ts"))};\n` +
        `import { Config } from ${JSON.stringify(join(REPO, "src/config/schema.ts"))};\n` +
        `const rt = await createRuntime({ config: Config.parse({}), configDir: ${JSON.stringify(dir)}, dataDir: ${JSON.stringify(join(dir, "data"))}, workspace: ${JSON.stringify(join(dir, "ws"))}, env: {} });\n` +
        `await Bun.sleep(500);\n` +
        `console.log(await Bun.file(${JSON.stringify(log)}).exists() ? (await Bun.file(${JSON.stringify(log)}).text()).split("\\n").filter(Boolean).length : 0);\n` +
        `const r = await launch({ policy: "workspace-write", argv: ["true"], cwd: ${JSON.stringify(join(dir, "ws"))}, workspace: ${JSON.stringify(join(dir, "ws"))}, timeoutMs: 30000, maxOutputBytes: 65536, config: Config.parse({}), hiddenPaths: [rt.dataDir] });\n` +
        `console.log(r.exit_code);\nawait rt.close();\n`,
    );
    const run = async () => {
      const p = Bun.spawn([process.execPath, script], { cwd: dir, stdout: "pipe", stderr: "pipe", env: { ...process.env, PATH: `${dirname(bwrap)}:${process.env.PATH}` } });
      const [code, out, err] = await Promise.all([p.exited, new Response(p.stdout).text(), new Response(p.stderr).text()]);
      if (code !== 0) throw new Error(`runtime process exited ${code}: ${err}`);
      return out.trim().split("\n");
    };
    expect(await run()).toEqual(["0", "0"]);
    expect(count()).toBe(2); // no cache yet: the probe, then the call
    expect(await run()).toEqual(["2", "0"]);
    expect(count()).toBe(3); // cache warm: the call only
  }, 120_000);
});
