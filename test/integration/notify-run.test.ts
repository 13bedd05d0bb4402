/**
 * notify: for runs. A headless `airlock run` (a real subprocess) whose ask could not be put to anyone ends
 * `blocked` and sends `run_blocked` to a real receiver on loopback before it exits; a scheduled run of a
 * recipe sends `run_blocked` with its run and schedule ids; a completed run sends `run_finished`.
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Config } from "../../src/config/schema.ts";
import { createRuntime } from "../../src/runtime.ts";
import { recipeRunner } from "../../src/scheduler/run-recipe.ts";
import { startReceiver, type Receiver } from "../fixtures/webhook-receiver.ts";

const MAIN = join(import.meta.dir, "../../src/main.ts");
let dir: string;
let r: Receiver | undefined;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "airlock-notify-run-"));
  mkdirSync(join(dir, "ws"));
  writeFileSync(join(dir, "turns.yaml"), `turns:\n  - tool_calls: [{ name: developer__write_file, arguments: { path: "x.txt", content: "x" } }]\n  - text: ""\n`);
  writeFileSync(join(dir, "done.yaml"), `turns:\n  - text: "all done"\n`);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));
afterEach(async () => {
  await r?.close();
  r = undefined;
});

function config(url: string, script = "turns.yaml"): string {
  return `provider: { name: scripted, script: ${script} }\nmode: smart\nnotify:\n  console_url: https://console.example/\n  notifiers:\n    - name: runs\n      on: [run_finished, run_blocked]\n      webhook: { url: "${url}" }\n`;
}

describe("notify: runs", () => {
  test("a headless airlock run that ends blocked sends run_blocked before it exits", async () => {
    r = startReceiver(() => 200);
    writeFileSync(join(dir, "airlock.yaml"), config(`${r.url}/runs`));
    const p = Bun.spawn([process.execPath, MAIN, "run", "write x.txt", "--headless", "--output-format", "json", "--data-dir", dir], {
      cwd: join(dir, "ws"),
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
      env: { ...process.env, AIRLOCK_HOME: "" },
    });
    const [stdout, , code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
    expect(code).toBe(3);
    const result = JSON.parse(stdout);
    expect(result.status).toBe("blocked");
    // sent before the process exited: nothing to wait for
    expect(r.received.length).toBe(1);
    expect(r.received[0]!.body).toMatchObject({
      event: "run_blocked",
      status: "blocked",
      session_id: result.session_id,
      title: "write x.txt",
      error: { code: "no_human_surface" },
      refused_calls: [{ tool: "developer__write_file", code: "no_human_surface" }],
      url: `https://console.example/#/s/${result.session_id}`,
    });
  });

  test("a scheduled run that ends blocked sends run_blocked with its run and schedule; a completed one sends run_finished", async () => {
    r = startReceiver(() => 200);
    const rt = await createRuntime({ config: Config.parse({ notify: { notifiers: [{ webhook: { url: r.url } }] } }), configDir: dir, dataDir: dir, env: {} });
    try {
      const run = recipeRunner(rt);
      const schedule = (name: string, script: string) => ({
        id: `sch_${name}`,
        name,
        cron: "0 3 * * *",
        recipe_path: join(dir, `${name}.recipe.yaml`),
        recipe_text: `name: ${name}\ninstructions: "nightly ${name}"\nprovider: { name: scripted, script: ${script} }\nmode: smart\nworkspace: ws\n`,
        params: {},
        enabled: true,
        created_at: new Date().toISOString(),
        last_fire_at: null,
      });
      const blocked = await run({ schedule: schedule("nightly", "turns.yaml"), runId: "run_1", trigger: "manual", signal: new AbortController().signal, onSession() {} });
      expect(blocked.status).toBe("blocked");
      const fine = await run({ schedule: schedule("fine", "done.yaml"), runId: "run_2", trigger: "manual", signal: new AbortController().signal, onSession() {} });
      expect(fine.status).toBe("completed");
      await rt.notify.idle();
      const bodies = r.received.map((x) => x.body).sort((a, b) => a.run_id.localeCompare(b.run_id));
      expect(bodies).toMatchObject([
        { event: "run_blocked", status: "blocked", run_id: "run_1", schedule_id: "sch_nightly", schedule_name: "nightly", title: "nightly nightly" },
        { event: "run_finished", status: "completed", run_id: "run_2", schedule_id: "sch_fine", schedule_name: "fine", error: null },
      ]);
    } finally {
      await rt.close();
    }
  });
});
