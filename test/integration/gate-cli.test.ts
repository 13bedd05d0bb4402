/**
 * `airlock actions list | answer` as a subprocess against a real server: lists the cards a session
 * may answer and answers a user-proof card with the approver token read from the data dir.
 */
import { afterEach, expect, test } from "bun:test";
import { resolve } from "node:path";
import { harnessSse, type Harness } from "../harness.ts";
import { startGateHarness } from "./gate-helpers.ts";

const MAIN = resolve(import.meta.dir, "../../src/main.ts");
let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

async function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const p = Bun.spawn([process.execPath, MAIN, ...args, "--data-dir", h!.dataDir, "--url", h!.url], { stdout: "pipe", stderr: "pipe", env: { ...process.env, AIRLOCK_HOME: h!.dataDir } });
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { code, stdout, stderr };
}

test("actions list shows a pending proof card; answer --allow-once sends the approver token; a second answer fails", async () => {
  h = await startGateHarness({
    config: { provider: { name: "scripted", script: "turns.yaml" }, mode: "autonomous" },
    files: { "turns.yaml": `turns:\n  - tool_calls: [{ name: developer__read_file, arguments: { path: ".env" } }]\n  - text: done\n` },
    workspaceFiles: { ".env": "K=1" },
  });
  const s = await h.createSession({ mode: "autonomous" });
  const reply = await harnessSse(h, `/sessions/${s.id}/reply`, { method: "POST", json: { message: "go" } });
  const card = (await reply.waitFor((e) => e.event === "action_required")).data;

  const list = await cli(["actions", "list", "--session", s.id, "--json"]);
  expect(list.code).toBe(0);
  expect(JSON.parse(list.stdout).actions.map((c: any) => c.request_id)).toEqual([card.request_id]);
  const text = await cli(["actions", "list"]);
  expect(text.stdout).toContain(card.request_id);
  expect(text.stdout).toContain("needs user proof");

  const ans = await cli(["actions", "answer", card.request_id, "--session", s.id, "--allow-once"]);
  expect(ans).toMatchObject({ code: 0 });
  expect(ans.stdout).toContain("allow_once");
  expect((await reply.waitFor((e) => e.event === "turn_finished")).data.status).toBe("completed");

  const again = await cli(["actions", "answer", card.request_id, "--session", s.id, "--deny"]);
  expect(again.code).toBe(1);
  expect(again.stderr).toContain("already decided");
  expect(again.stdout).toBe("");
});
