/**
 * The sandbox policies, checked with real processes under real bubblewrap: what a command may write
 * (seen from the host), protected git paths, network, environment. The same checks run against a
 * launcher that skips bubblewrap (negative control) and must find the violations there.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import path from "node:path";
import { Config } from "../../src/config/schema.ts";
import type { SandboxPolicy } from "../../src/launcher/policy.ts";
import { launch, type LaunchOptions, type LaunchResult } from "../../src/launcher/spawn.ts";

type LaunchFn = (o: LaunchOptions) => Promise<LaunchResult>;

/** The real launcher. */
const confined: LaunchFn = launch;
/** A launcher that skips bubblewrap: it runs everything as danger-full-access (the negative control). */
const skipsBwrap: LaunchFn = (o) => launch({ ...o, policy: "danger-full-access" });

const config = Config.parse({});
let server: Bun.TCPSocketListener<undefined>;
let accepted = 0;
const cleanup: string[] = [];

beforeAll(() => {
  server = Bun.listen({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      open(s) {
        accepted++;
        s.end();
      },
      data() {},
    },
  });
});
afterAll(() => {
  server.stop(true);
  for (const p of cleanup) rmSync(p, { recursive: true, force: true });
});

function tempDir(parent: string, prefix: string): string {
  const d = realpathSync(mkdtempSync(path.join(parent, prefix)));
  cleanup.push(d);
  return d;
}

/** A fresh git workspace under /tmp (the mount-order case) plus outside folders under /tmp and /var/tmp. */
function fixture() {
  const ws = tempDir(tmpdir(), "airlock-perm-ws-");
  const outsideTmp = tempDir(tmpdir(), "airlock-perm-out-");
  mkdirSync("/var/tmp", { recursive: true });
  const outsideVar = tempDir("/var/tmp", "airlock-perm-out-");
  const nonce = Math.random().toString(36).slice(2, 10);
  const tmpFile = `/tmp/airlock-perm-${nonce}`;
  const homeFile = path.join(homedir(), `.airlock-perm-${nonce}`);
  cleanup.push(tmpFile, homeFile);
  execFileSync("git", ["init", "-q", ws]);
  writeFileSync(path.join(ws, "keep.txt"), "keep\n");
  return { ws, outsideTmp, outsideVar, tmpFile, homeFile };
}

async function sh(run: LaunchFn, policy: SandboxPolicy, ws: string, script: string): Promise<LaunchResult> {
  return run({ policy, argv: ["bash", "-c", script], cwd: ws, workspace: ws, timeoutMs: 20_000, maxOutputBytes: 1 << 20, config });
}

/** Tries to reach a loopback server the test started outside the sandbox. */
async function connects(run: LaunchFn, policy: SandboxPolicy, ws: string): Promise<boolean> {
  const port = server.port;
  const before = accepted;
  const r = await sh(run, policy, ws, `exec 3<>/dev/tcp/127.0.0.1/${port} && echo CONNECTED`);
  return r.stdout.includes("CONNECTED") || accepted > before;
}

/** Every way a read-only command changed the host or reached the network; [] when the policy held. */
async function readOnlyViolations(run: LaunchFn): Promise<string[]> {
  const f = fixture();
  const v: string[] = [];
  await sh(run, "read-only", f.ws, `echo x > ro.txt; rm -f keep.txt; mkdir newdir; echo x > ${f.outsideTmp}/ro.txt; echo x > ${f.outsideVar}/ro.txt; echo x > ${f.tmpFile}; echo x > ${f.homeFile}; echo x > .git/hooks/pre-commit`);
  if (existsSync(path.join(f.ws, "ro.txt"))) v.push("workspace write");
  if (!existsSync(path.join(f.ws, "keep.txt"))) v.push("workspace delete");
  if (existsSync(path.join(f.ws, "newdir"))) v.push("workspace mkdir");
  if (existsSync(path.join(f.outsideTmp, "ro.txt")) || existsSync(f.tmpFile)) v.push("/tmp write");
  if (existsSync(path.join(f.outsideVar, "ro.txt"))) v.push("outside write");
  if (existsSync(f.homeFile)) v.push("home write");
  if (existsSync(path.join(f.ws, ".git/hooks/pre-commit"))) v.push("git hook write");
  if (await connects(run, "read-only", f.ws)) v.push("network");
  return v;
}

/** Every way a workspace-write command broke the policy, and every allowed thing that failed. */
async function workspaceWriteViolations(run: LaunchFn): Promise<string[]> {
  const f = fixture();
  const v: string[] = [];
  const configBefore = readFileSync(path.join(f.ws, ".git/config"), "utf8");
  const r = await sh(run, "workspace-write", f.ws, `echo inside > ww.txt; mkdir -p sub/deeper && echo deep > sub/deeper/d.txt; echo x > ${f.outsideTmp}/ww.txt; echo x > ${f.outsideVar}/ww.txt; echo x > ${f.tmpFile}; echo x > ${f.homeFile}`);
  if (readFileSync(path.join(f.ws, "ww.txt"), { encoding: "utf8", flag: "a+" }) !== "inside\n") v.push(`workspace write failed: ${r.stderr}`);
  if (!existsSync(path.join(f.ws, "sub/deeper/d.txt"))) v.push("workspace mkdir failed");
  if (existsSync(path.join(f.outsideTmp, "ww.txt")) || existsSync(f.tmpFile)) v.push("/tmp write");
  if (existsSync(path.join(f.outsideVar, "ww.txt"))) v.push("outside write");
  if (existsSync(f.homeFile)) v.push("home write");

  await sh(run, "workspace-write", f.ws, "printf '#!/bin/sh\\necho pwned\\n' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit");
  await sh(run, "workspace-write", f.ws, "mv .git/hooks .git/hooks.moved && mkdir .git/hooks && echo evil > .git/hooks/post-commit");
  if (existsSync(path.join(f.ws, ".git/hooks/pre-commit")) || existsSync(path.join(f.ws, ".git/hooks/post-commit"))) v.push("git hook created");
  await sh(run, "workspace-write", f.ws, "git config core.hooksPath /tmp/evil; echo '[alias] x = !evil' >> .git/config; rm -f .git/config");
  if (readFileSync(path.join(f.ws, ".git/config"), { encoding: "utf8", flag: "a+" }) !== configBefore) v.push("git config changed");

  const c = await sh(run, "workspace-write", f.ws, "git add ww.txt && git -c user.name=t -c user.email=t@example.com commit -q -m inside && echo COMMITTED");
  const log = execFileSync("git", ["-C", f.ws, "log", "--format=%s"], { encoding: "utf8" }).trim();
  if (!c.stdout.includes("COMMITTED") || log !== "inside") v.push(`git commit failed: ${c.stderr}`);

  if (await connects(run, "workspace-write", f.ws)) v.push("network");
  return v;
}

describe("launcher permissions under bubblewrap", () => {
  test("read-only: no write succeeds anywhere (the workspace, /tmp on the host side, /var/tmp, HOME), no loopback TCP", async () => {
    expect(await readOnlyViolations(confined)).toEqual([]);
  });

  test("workspace-write: workspace writes land on the host, writes outside fail, .git/hooks and .git/config are untouchable, git commit works, no loopback TCP", async () => {
    expect(await workspaceWriteViolations(confined)).toEqual([]);
  });

  test("a workspace that is not a git repository is writable too", async () => {
    const ws = tempDir(tmpdir(), "airlock-perm-plain-");
    const r = await sh(confined, "workspace-write", ws, "echo ok > f.txt && cat f.txt");
    expect(r.stdout).toBe("ok\n");
    expect(readFileSync(path.join(ws, "f.txt"), "utf8")).toBe("ok\n");
  });

  test("a repository without .git/hooks gets one created read-only, so no hook can be planted", async () => {
    const f = fixture();
    rmSync(path.join(f.ws, ".git/hooks"), { recursive: true });
    await sh(confined, "workspace-write", f.ws, "mkdir -p .git/hooks; echo evil > .git/hooks/pre-commit");
    expect(existsSync(path.join(f.ws, ".git/hooks/pre-commit"))).toBe(false);
  });
});

describe("negative control: the same checks against a launcher that skips bubblewrap", () => {
  test("read-only checks find every violation", async () => {
    const v = await readOnlyViolations(skipsBwrap);
    expect(v).toEqual(["workspace write", "workspace delete", "workspace mkdir", "/tmp write", "outside write", "home write", "git hook write", "network"]);
  });

  test("workspace-write checks find every violation", async () => {
    const v = await workspaceWriteViolations(skipsBwrap);
    expect(v).toEqual(["/tmp write", "outside write", "home write", "git hook created", "git config changed", "network"]);
  });
});

describe("launcher environment", () => {
  const secrets: Record<string, string> = {
    AIRLOCK_TEST_API_KEY: "sk-test-1",
    AIRLOCK_TEST_TOKEN: "tok-test-2",
    AIRLOCK_TEST_SECRET: "sec-test-3",
    AIRLOCK_TEST_PASSWORD_FILE: "pw-test-4",
    DATABASE_URL: "postgres://u:pw-test-5@h/db",
    AIRLOCK_TEST_UNLISTED: "plain-test-6",
  };
  beforeAll(() => Object.assign(process.env, secrets));
  afterAll(() => {
    for (const k of Object.keys(secrets)) delete process.env[k];
  });

  for (const policy of ["read-only", "workspace-write", "danger-full-access"] as const) {
    test(`${policy}: a secret set in the test's environment is absent from env (and so is any unlisted variable)`, async () => {
      const ws = tempDir(tmpdir(), "airlock-env-");
      const r = await sh(confined, policy, ws, "env");
      expect(r.exit_code).toBe(0);
      for (const [k, v] of Object.entries(secrets)) {
        expect(r.stdout).not.toContain(k);
        expect(r.stdout).not.toContain(v);
      }
      expect(r.stdout).toContain(`HOME=${process.env.HOME}`);
      expect(r.stdout).toContain("PATH=");
    });
  }

  test("extraEnv cannot smuggle a secret-looking name in", async () => {
    const ws = tempDir(tmpdir(), "airlock-env-");
    const r = await launch({ policy: "read-only", argv: ["env"], cwd: ws, workspace: ws, timeoutMs: 10_000, maxOutputBytes: 1 << 20, config, extraEnv: { SNEAKY_TOKEN: "t", BUN_BE_BUN: "1" } });
    expect(r.stdout).not.toContain("SNEAKY_TOKEN");
    expect(r.stdout).toContain("BUN_BE_BUN=1");
  });
});
