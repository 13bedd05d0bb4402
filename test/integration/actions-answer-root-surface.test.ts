/**
 * `airlock actions answer ID` without `--session` (a real server on loopback, the CLI as a subprocess): the
 * card is answered at its root surface, the session it was relayed to; and a missing approver token and a
 * wrong one are told apart (`user_proof_required` / `user_proof_invalid`), each message saying where the token is.
 */
import { afterEach, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { harnessSse, type Harness } from "../harness.ts";
import { startGateHarness } from "./gate-helpers.ts";

const MAIN = resolve(import.meta.dir, "../../src/main.ts");
let h: Harness | undefined;
const dirs: string[] = [];
afterEach(async () => {
  await h?.close();
  h = undefined;
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function cli(args: string[], dataDir = h!.dataDir): Promise<{ code: number; stdout: string; stderr: string }> {
  const p = Bun.spawn([process.execPath, MAIN, ...args, "--data-dir", dataDir, "--url", h!.url], { stdout: "pipe", stderr: "pipe", env: { ...process.env, AIRLOCK_HOME: dataDir } });
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { code, stdout, stderr };
}

/** A root whose subagent reads `.env`: the floor's proof card, homed in the child and relayed to the root. */
async function childCard() {
  h = await startGateHarness({
    config: { provider: { name: "scripted", script: "turns.yaml" }, mode: "autonomous" },
    files: {
      "turns.yaml": `
turns:
  - tool_calls: [{ name: subagent__spawn, arguments: { instructions: "child" } }]
  - text: "root done"
subagents:
  - turns:
      - tool_calls: [{ name: developer__read_file, arguments: { path: ".env" } }]
      - text: "child done"
`,
    },
    workspaceFiles: { ".env": "API=1" },
  });
  const root = await h.createSession({ mode: "autonomous" });
  const reply = await harnessSse(h, `/sessions/${root.id}/reply`, { method: "POST", json: { message: "go" } });
  const card = (await reply.waitFor((e) => e.event === "action_required")).data;
  expect(card.home_session_id).not.toBe(root.id);
  expect(card.requires_user_proof).toBe(true);
  return { root, reply, card };
}

test("actions answer without --session allows a subagent's card at the root it was relayed to; --session still works", async () => {
  const { root, reply, card } = await childCard();

  const ans = await cli(["actions", "answer", card.request_id, "--allow-once"]);
  expect(ans.stderr).toBe("");
  expect(ans).toMatchObject({ code: 0, stdout: `${card.request_id}: allow_once (from ${root.id})\n` });
  expect((await reply.waitFor((e) => e.event === "turn_finished")).data.status).toBe("completed");
  const accepted = (await h!.rt.store.listAudit({ request_id: card.request_id })).filter((a) => a.kind === "card_decision");
  expect(accepted.map((a) => [a.session_id, a.outcome, a.actor])).toEqual([[root.id, "accepted", "http"]]);

  // a late answer at the root surface is told the card was decided, with --session or without
  const again = await cli(["actions", "answer", card.request_id, "--deny"]);
  expect(again.code).toBe(1);
  expect(again.stderr).toContain("airlock: already_decided:");
  const atSession = await cli(["actions", "answer", card.request_id, "--session", root.id, "--deny"]);
  expect(atSession.code).toBe(1);
  expect(atSession.stderr).toContain("airlock: already_decided:");

  // an unknown card: not_found, and the hint names the command that lists the pending cards
  const unknown = await cli(["actions", "answer", "act_nope", "--deny"]);
  expect(unknown.code).toBe(1);
  expect(unknown.stderr).toContain("airlock: not_found:");
  expect(unknown.stderr).toContain("airlock actions list");
  const refused = await h!.rt.store.listAudit({ request_id: "act_nope" });
  expect(refused.map((a) => [a.kind, a.outcome, a.code, a.session_id])).toEqual([["card_decision", "refused", "not_found", null]]);
});

test("POST /actions/:id answers at the root surface only: the same checks as a session's route, a deny needs no proof", async () => {
  const { root, reply, card } = await childCard();
  const post = async (body: unknown, headers: Record<string, string> = {}) => {
    const r = await h!.api(`/actions/${card.request_id}`, { method: "POST", json: body, headers });
    return { status: r.status, body: (await r.json()) as any };
  };
  expect(await post({ decision: "maybe" })).toMatchObject({ status: 400, body: { error: "bad_request" } });
  expect(await post({ decision: "allow_session" }, { "X-Airlock-Approver": h!.rt.tokens.approverToken })).toMatchObject({ status: 409, body: { error: "session_rule_not_offered" } });
  expect(await post({ decision: "deny", reason: "not now" })).toEqual({ status: 200, body: { request_id: card.request_id, decision: "deny", decided_in: root.id, reason: "not now" } });
  expect((await reply.waitFor((e) => e.event === "action_resolved")).data).toEqual({ request_id: card.request_id, decision: "deny", decided_in: root.id });
  expect(await post({ decision: "deny" })).toMatchObject({ status: 409, body: { error: "already_decided" } });
});

test("a missing approver token and a wrong one get different codes and messages, each saying where the token is", async () => {
  const { root, reply, card } = await childCard();
  const post = async (approver?: string) => {
    const headers: Record<string, string> = approver === undefined ? {} : { "X-Airlock-Approver": approver };
    const r = await h!.api(`/sessions/${root.id}/actions/${card.request_id}`, { method: "POST", json: { decision: "allow_once" }, headers });
    return { status: r.status, body: (await r.json()) as any };
  };
  const missing = await post();
  const empty = await post("");
  const wrong = await post("not-the-token");
  expect(missing).toMatchObject({ status: 403, body: { error: "user_proof_required", request_id: card.request_id } });
  expect(empty.body).toEqual(missing.body);
  expect(wrong).toMatchObject({ status: 403, body: { error: "user_proof_invalid", request_id: card.request_id } });
  expect(missing.body.message).toContain("no approver token came");
  expect(wrong.body.message).toContain("is not this server's");
  for (const m of [missing.body.message, wrong.body.message]) {
    expect(m).toContain("approver-token file");
    expect(m).toContain("'airlock token'");
    expect(m).toContain("A deny needs no proof");
    expect(m).not.toContain("not-the-token");
  }

  // the CLI run with another data dir (the server's API token, a stale approver token): refused as a wrong token,
  // and the hint names the file it sent and the fix
  const other = mkdtempSync(join(tmpdir(), "airlock-other-"));
  dirs.push(other);
  writeFileSync(join(other, "api-token"), h!.token, { mode: 0o600 });
  writeFileSync(join(other, "approver-token"), "stale-approver-token", { mode: 0o600 });
  const stale = await cli(["actions", "answer", card.request_id, "--allow-once"], other);
  expect(stale.code).toBe(1);
  expect(stale.stdout).toBe("");
  expect(stale.stderr).toContain("airlock: user_proof_invalid:");
  expect(stale.stderr).toContain(`${other}/approver-token`);
  expect(stale.stderr).toContain("--data-dir");

  const audit = (await h!.rt.store.listAudit({ request_id: card.request_id })).filter((a) => a.kind === "card_decision");
  expect(audit.map((a) => [a.code, (a.detail as any).proof])).toEqual([
    ["user_proof_required", false],
    ["user_proof_required", false],
    ["user_proof_invalid", false],
    ["user_proof_invalid", false],
  ]);
  // the right token from the server's data dir still allows
  expect((await cli(["actions", "answer", card.request_id, "--allow-once"])).code).toBe(0);
  expect((await reply.waitFor((e) => e.event === "turn_finished")).data.status).toBe("completed");
});
