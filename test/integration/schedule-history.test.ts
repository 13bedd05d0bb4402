/**
 * A schedule's run history is kept after the schedule is removed (issue 13 item 9), and the CLI shows it:
 * `airlock schedule runs [ID]` (text table and `--json`) against the real `airlock serve`.
 */
import { afterAll, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawnServe } from "../harness-serve.ts";

const MAIN = join(import.meta.dir, "../../src/main.ts");
const dir = mkdtempSync(join(tmpdir(), "airlock-sched-history-"));
const procs: Bun.Subprocess[] = [];
afterAll(async () => {
  for (const p of procs) {
    p.kill("SIGKILL");
    await p.exited;
  }
  rmSync(dir, { recursive: true, force: true });
});

async function airlock(args: string[]): Promise<{ code: number; out: string; err: string }> {
  const p = Bun.spawn([process.execPath, MAIN, ...args], { cwd: join(dir, "ws"), stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  procs.push(p);
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { code, out, err };
}

test("runs of a removed schedule stay listed, marked removed, over HTTP and with airlock schedule runs [ID] (text and --json)", async () => {
  mkdirSync(join(dir, "ws"));
  // a call a headless run must refuse (smart mode asks before a write), then the answer: `completed`, 1 refused
  writeFileSync(join(dir, "turns.yaml"), 'turns:\n  - tool_calls: [{ name: developer__shell, arguments: { command: "touch ticked" } }]\n  - text: "tick done"\n');
  const recipe = join(dir, "tick.yaml");
  writeFileSync(recipe, 'name: tick\ninstructions: "tick"\nprovider: { name: scripted, script: turns.yaml }\n');
  const sp = await spawnServe([process.execPath, MAIN, "serve", "--port", "0", "--data-dir", dir], { cwd: join(dir, "ws") });
  procs.push(sp.proc);
  const common = ["--url", sp.url, "--data-dir", dir];
  const add = await airlock(["schedule", "add", "--cron", "0 0 1 1 *", "--recipe", recipe, "--json", ...common]);
  expect(add.code).toBe(0);
  const id = JSON.parse(add.out).id as string;
  const run = await airlock(["schedule", "run", id, ...common]);
  expect(run.code).toBe(0);
  const runId = JSON.parse(run.out).run_id as string;
  expect((await airlock(["schedule", "remove", id, ...common])).code).toBe(0);

  const token = readFileSync(join(dir, "api-token"), "utf8").trim();
  const res = await fetch(`${sp.url}/schedules/${id}/runs`, { headers: { authorization: `Bearer ${token}` } });
  expect(res.status).toBe(200);
  const body = (await res.json()) as any;
  expect(body.runs.map((r: any) => ({ run_id: r.run_id, schedule_id: r.schedule_id, schedule_removed: r.schedule_removed, status: r.status, result: r.result }))).toEqual([
    { run_id: runId, schedule_id: id, schedule_removed: true, status: "completed", result: "tick done" },
  ]);

  const json = await airlock(["schedule", "runs", id, "--json", ...common]);
  expect(json.code).toBe(0);
  expect(JSON.parse(json.out)).toEqual({ runs: body.runs }); // one shape with actions/sessions/schedule list: an object naming its list
  const all = await airlock(["schedule", "runs", "--json", ...common]);
  expect(JSON.parse(all.out).runs.map((r: any) => r.run_id)).toEqual([runId]);
  const text = await airlock(["schedule", "runs", ...common]);
  expect(text.code).toBe(0);
  const lines = text.out.trimEnd().split("\n");
  expect(lines[0]!.split(/\s+/)).toEqual(["RUN", "SCHEDULE", "STATUS", "REFUSED", "TRIGGER", "STARTED", "FINISHED", "SESSION"]);
  // `completed`, and how many of its calls were refused beside it
  expect(lines.slice(1).map((l) => l.split(/\s+/).slice(0, 6))).toEqual([[runId, id, "(removed)", "completed", "1", "manual"]]);

  // a schedule that never existed is still 404, exit 1 with the hint
  const none = await airlock(["schedule", "runs", "sch_nope", ...common]);
  expect(none.code).toBe(1);
  expect(none.err).toContain("airlock schedule list");
  sp.proc.kill("SIGTERM");
  expect(await sp.proc.exited).toBe(0);
}, 120_000);
