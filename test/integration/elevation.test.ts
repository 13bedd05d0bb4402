/**
 * Elevation end to end (SPEC §9) through the real runtime, gate, launcher and bubblewrap: a valid
 * `sandbox_permissions` request raises a card that needs user proof; approved, that one call runs
 * under the wider policy; the next call runs under the session's policy again; a second, identical
 * elevation request raises a new card (an approval is never reused).
 */
import { afterEach, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { harnessSse, startHarness, type Harness } from "../harness.ts";

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const ELEVATED = { command: "echo one > a.txt", sandbox_permissions: "workspace-write", justification: "write a.txt" };
const TURNS = `
turns:
  - tool_calls: [{ name: developer__shell, arguments: ${JSON.stringify(ELEVATED)} }]
  - tool_calls: [{ name: developer__shell, arguments: { command: "echo two > b.txt" } }]
  - tool_calls: [{ name: developer__shell, arguments: ${JSON.stringify({ ...ELEVATED, command: "echo again > c.txt" })} }]
  - text: done
`;

test("an approved elevation applies to that call only, and is never reused", async () => {
  h = await startHarness({ config: { provider: { name: "scripted", script: "turns.yaml" }, mode: "autonomous", sandbox: "read-only" }, files: { "turns.yaml": TURNS } });
  const s = await h.createSession();
  expect(s.sandbox).toBe("read-only");
  const reply = await harnessSse(h, `/sessions/${s.id}/reply`, { method: "POST", json: { message: "go" } });
  const decide = async (requestId: string, decision: string, approver?: string) =>
    (await h!.api(`/sessions/${s.id}/actions/${requestId}`, { method: "POST", json: { decision }, headers: approver ? { "x-airlock-approver": approver } : {} })).status;

  const first = (await reply.waitFor((e) => e.event === "action_required")).data;
  expect(first).toMatchObject({ inspector: "elevation", requires_user_proof: true, arguments: ELEVATED });
  expect(await decide(first.request_id, "allow_once")).toBe(403); // the API token alone is no proof
  expect(await decide(first.request_id, "allow_once", h.rt.tokens.approverToken)).toBe(200);

  const second = (await reply.waitFor((e) => e.event === "action_required" && e.data.request_id !== first.request_id)).data;
  expect(second.arguments.command).toBe("echo again > c.txt");
  expect(await decide(second.request_id, "deny")).toBe(200);
  await reply.ended;

  const results = reply.events.filter((e) => e.event === "tool_result").map((e) => e.data);
  expect(results.map((r) => [r.ok, r.ok ? r.result.policy : r.error.code])).toEqual([
    [true, "workspace-write"], // the approved call ran under the wider policy
    [true, "read-only"], // the next call: the session's policy again
    [false, "denied"], // the identical request raised its own card, denied
  ]);
  expect(results[1].result.exit_code).not.toBe(0);
  expect(results[1].result.stderr).toContain("Read-only file system");
  expect(existsSync(join(h.workspace, "a.txt"))).toBe(true);
  expect(existsSync(join(h.workspace, "b.txt"))).toBe(false);
  expect(existsSync(join(h.workspace, "c.txt"))).toBe(false);
});
