/**
 * `airlock actions list | answer --allow-session` as a subprocess against a real server: the list shows
 * the card's suggested rule before it is taken; answering stores it for the session tree, and a later
 * matching call runs without a card.
 */
import { afterEach, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { harnessSse, startHarness, type Harness } from "../harness.ts";

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

test("actions list shows the suggested rule; answer --allow-session stores it and the next matching call runs without a card", async () => {
  h = await startHarness({
    config: { provider: { name: "scripted", script: "turns.yaml" }, mode: "smart" },
    files: {
      "turns.yaml": `turns:
  - tool_calls: [{ name: developer__shell, arguments: { command: "mkdir -p out/a" } }]
  - tool_calls: [{ name: developer__shell, arguments: { command: "mkdir -p out/b" } }]
  - text: done
`,
    },
  });
  const s = await h.createSession({ mode: "smart" });
  const reply = await harnessSse(h, `/sessions/${s.id}/reply`, { method: "POST", json: { message: "go" } });
  const card = (await reply.waitFor((e) => e.event === "action_required")).data;

  const text = await cli(["actions", "list", "--session", s.id]);
  expect(text.code).toBe(0);
  expect(text.stdout).toContain("allow for this session: Bash(mkdir:*) (--allow-session)");

  const ans = await cli(["actions", "answer", card.request_id, "--session", s.id, "--allow-session"]);
  expect(ans).toMatchObject({ code: 0, stderr: "" });
  expect(ans.stdout).toContain(`${card.request_id}: allow_session`);
  expect(ans.stdout).toContain("rule Bash(mkdir:*) (rul_");
  expect((await reply.waitFor((e) => e.event === "turn_finished")).data).toMatchObject({ status: "completed", answer: "done" });
  expect(reply.events.filter((e) => e.event === "action_required")).toHaveLength(1);
  expect(existsSync(join(h.workspace, "out/b"))).toBe(true);

  const both = await cli(["actions", "answer", card.request_id, "--session", s.id, "--allow-session", "--deny"]);
  expect(both.code).toBe(2);
  expect(both.stderr).toContain("cannot be used with option");
});
