/**
 * @module test/security/process-lifetime.test
 * Every host process tree dies with airlock, in every policy: under `danger-full-access`, `kill -9`
 * of airlock during `sleep …; touch X` used to leave the shell running, and it wrote X afterwards.
 * A real airlock process (the launcher and hook runner in a bun child, test/security/probe.ts) is
 * killed with SIGKILL mid-call; the test then waits until no process of the call is left (an event,
 * not a clock) and checks that X never appeared. Run as root and as nobody.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { chmodSync, copyFileSync, existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { stringify } from "yaml";
import { testUsers, type TestUser } from "../as-user.ts";
import { compiledBinary } from "../harness-binary.ts";
import { ownedDir, probeEnv, removeTempDirs, startProbe, tempBase } from "./probe.ts";
import { processesWith, waitFor } from "../processes.ts";



type Kind = "danger-full-access" | "workspace-write" | "hook";

/** Starts `sleep; touch survived` through airlock as `user`, kills airlock with SIGKILL once it runs, returns whether `survived` appeared. */
async function killMidCall(user: TestUser, kind: Kind): Promise<boolean> {
  const base = tempBase("airlock-life-");
  const home = ownedDir(user, base, "home");
  const ws = ownedDir(user, base, "ws");
  const marker = `lifetime-${crypto.randomUUID()}`;
  const script = `touch started; sleep 6; touch ${join(ws, "survived")} # ${marker}`;
  const request = kind === "hook" ? { kind: "hook", command: script, cwd: ws } : { kind: "launch", policy: kind, argv: ["sh", "-c", script], cwd: ws };
  const proc = startProbe(user, request, probeEnv(home));
  await waitFor(() => existsSync(join(ws, "started")), "the call to start");
  proc.kill("SIGKILL");
  await proc.exited;
  // once no process of the call is left, `survived` either exists already or never will
  await waitFor(() => processesWith(marker).length === 0, "the call's processes to end");
  return existsSync(join(ws, "survived"));
}

async function survivors(kinds: Kind[]): Promise<Record<string, boolean>> {
  const survived: Record<string, boolean> = {};
  for (const kind of kinds) for (const user of testUsers()) survived[`${kind} as ${user.name}`] = await killMidCall(user, kind);
  return survived;
}

/**
 * The same through the compiled binary: `airlock run` (scripted model, autonomous, danger-full-access)
 * calls `developer__shell`; airlock is killed with SIGKILL once the command runs.
 */
async function killBinaryMidCall(user: TestUser): Promise<boolean> {
  const base = tempBase("airlock-life-bin-");
  const bin = join(base, "airlock");
  copyFileSync(await compiledBinary(), bin);
  chmodSync(bin, 0o755);
  const home = ownedDir(user, base, "home");
  const ws = ownedDir(user, base, "ws");
  const marker = `lifetime-${crypto.randomUUID()}`;
  const command = `touch started; sleep 6; touch ${join(ws, "survived")} # ${marker}`;
  const data = ownedDir(user, base, "data", {
    "airlock.yaml": stringify({ provider: { name: "scripted", script: "turns.yaml" }, mode: "autonomous", sandbox: "danger-full-access" }),
    "turns.yaml": stringify({ turns: [{ tool_calls: [{ name: "developer__shell", arguments: { command } }] }, { text: "done" }] }),
  });
  const proc = Bun.spawn([...user.prefix, bin, "run", "go", "--headless", "--data-dir", data], {
    cwd: ws,
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
    env: probeEnv(home),
  });
  const err = new Response(proc.stderr).text();
  await waitFor(() => existsSync(join(ws, "started")) || proc.exitCode !== null, "the shell call to start");
  if (!existsSync(join(ws, "started"))) throw new Error(`airlock as ${user.name} ended before the call ran: ${await err}`);
  proc.kill("SIGKILL");
  await proc.exited;
  await waitFor(() => processesWith(marker).length === 0, "the call's processes to end");
  return existsSync(join(ws, "survived"));
}

afterAll(removeTempDirs);

describe("host processes die with airlock", () => {
  test("the compiled binary: kill -9 of `airlock run` mid-call under danger-full-access leaves nothing running, for every user", async () => {
    const survived: Record<string, boolean> = {};
    for (const user of testUsers()) survived[user.name] = await killBinaryMidCall(user);
    expect(Object.entries(survived).filter(([, s]) => s)).toEqual([]);
  }, 300_000);

  test("kill -9 of airlock mid-call kills the call's whole tree under danger-full-access (and workspace-write), for every user", async () => {
    const kinds: Kind[] = ["danger-full-access", "workspace-write"];
    const survived = await survivors(kinds);
    expect(Object.entries(survived).filter(([, s]) => s)).toEqual([]);
  }, 180_000);

  test("kill -9 of airlock while a hook runs kills the hook's whole tree, for every user", async () => {
    const survived = await survivors(["hook"]);
    expect(Object.entries(survived).filter(([, s]) => s)).toEqual([]);
  }, 180_000);
});
