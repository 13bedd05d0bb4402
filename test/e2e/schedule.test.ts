/**
 * End-to-end: the scheduler inside `airlock serve` (compiled binary), driven by `airlock schedule …`
 * over HTTP. A schedule firing every second runs, skips a fire that overlaps its previous run, and its
 * runs are listed with their result objects.
 */
import { afterEach, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { stringify } from "yaml";
import { ensureBinary, makeSandbox, spawnAirlock, type Sandbox } from "./headless-helpers.ts";
import { spawnServe } from "../harness-serve.ts";

beforeAll(async () => {
  await ensureBinary();
}, 300_000);

interface Server {
  url: string;
  token: string;
  stop(): Promise<number>;
}

let cleanups: (() => Promise<unknown> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.reverse()) await c();
  cleanups = [];
});

/** Starts `airlock serve --port 0` and waits for its "listening on URL" line on stderr. */
async function startServe(b: Sandbox): Promise<Server> {
  const { proc, url } = await spawnServe([join(import.meta.dir, "..", "..", "dist", "airlock"), "serve", "--port", "0", "--data-dir", b.dataDir], {
    cwd: b.workspace,
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: b.home, LANG: "C.UTF-8" },
  });
  const token = readFileSync(join(b.dataDir, "api-token"), "utf8").trim();
  let stopped = false;
  const stop = async () => {
    if (!stopped) {
      stopped = true;
      proc.kill("SIGTERM");
    }
    return proc.exited;
  };
  cleanups.push(stop);
  return { url, token, stop };
}

function api(s: Server, path: string, init: RequestInit = {}): Promise<any> {
  return fetch(s.url + path, { ...init, headers: { authorization: `Bearer ${s.token}`, ...(init.headers ?? {}) } }).then((r) => r.json());
}

/** Polls the server (a condition on live state, not a timing assertion) until `pred` holds or the deadline passes. */
async function until<T>(what: string, get: () => Promise<T>, pred: (v: T) => boolean, deadlineMs = 20_000): Promise<T> {
  const end = Date.now() + deadlineMs;
  for (;;) {
    const v = await get();
    if (pred(v)) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}; last value: ${JSON.stringify(v).slice(0, 2000)}`);
    await Bun.sleep(100);
  }
}

describe("airlock schedule + serve (binary)", () => {
  test("every-second schedule: runs, skips an overlapping fire, lists runs with result objects; run now; remove", async () => {
    // the server's own config names a script; it must exist (serve checks it at startup), the runs use the recipe's
    const b = makeSandbox({ turns: { turns: [] } });
    cleanups.push(() => b.cleanup());
    // Each run takes ≥ 1.5 s (the scripted answer waits), so the next every-second fire overlaps it.
    b.write("recipes/turns.yaml", stringify({ turns: [{ tool_calls: [{ name: "developer__shell", arguments: { command: "echo tick" } }] }, { text: "tick done", delay_ms: 1500 }] }));
    const recipe = b.write(
      "recipes/tick.yaml",
      stringify({ name: "tick", instructions: "tick {{ n }}", parameters: { n: { type: "integer", default: 1 } }, provider: { name: "scripted", script: "turns.yaml" }, mode: "autonomous" }),
    );
    const server = await startServe(b);
    const common = ["--url", server.url, "--data-dir", b.dataDir];

    const bad = await spawnAirlock(b, ["schedule", "add", "--cron", "* * * * * *", "--recipe", recipe, "--param", "n=ten", ...common]).done;
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('parameters.n: expected integer, got "ten"');

    const add = await spawnAirlock(b, ["schedule", "add", "--cron", "* * * * * *", "--recipe", recipe, "--name", "every-second", "--json", ...common]).done;
    expect(add.code).toBe(0);
    const sch = JSON.parse(add.stdout);
    expect(sch).toMatchObject({ name: "every-second", cron: "* * * * * *", recipe_path: recipe, enabled: true });

    const { runs } = await until(
      "a completed run and a skipped fire",
      () => api(server, `/schedules/${sch.id}/runs`),
      (v: any) => v.runs.some((r: any) => r.status === "completed") && v.runs.some((r: any) => r.status === "skipped"),
    );
    const completed = runs.find((r: any) => r.status === "completed");
    const skipped = runs.find((r: any) => r.status === "skipped");
    expect(completed).toMatchObject({ status: "completed", result: "tick done", tool_calls: 1, refused_calls: [], error: null, schedule_id: sch.id, trigger: "cron" });
    expect(completed.session_id).toStartWith("ses_");
    expect(skipped.reason).toContain("still running");
    const one = await api(server, `/runs/${completed.run_id}`);
    expect(one).toEqual(completed);

    const list = await spawnAirlock(b, ["schedule", "list", "--json", ...common]).done;
    expect(list.code).toBe(0);
    expect(JSON.parse(list.stdout).schedules.map((s: any) => s.id)).toEqual([sch.id]); // {schedules: […]}, as actions/sessions

    const rm = await spawnAirlock(b, ["schedule", "remove", sch.id, ...common]).done;
    expect(rm.code).toBe(0);
    expect((await api(server, "/schedules")).schedules).toEqual([]);
    expect((await api(server, `/runs/${completed.run_id}`)).status).toBe("completed");

    // run now: a yearly schedule, run on demand; prints its result object, exit as airlock run
    const yearly = JSON.parse((await spawnAirlock(b, ["schedule", "add", "--cron", "0 0 1 1 *", "--recipe", recipe, "--json", ...common]).done).stdout);
    const now = await spawnAirlock(b, ["schedule", "run", yearly.id, ...common]).done;
    expect(now.code).toBe(0);
    expect(now.stdout.trimEnd().split("\n")).toHaveLength(1);
    expect(JSON.parse(now.stdout)).toMatchObject({ status: "completed", result: "tick done", trigger: "manual", schedule_id: yearly.id });

    expect(await server.stop()).toBe(0);
  }, 60_000);
});
