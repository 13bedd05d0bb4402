/**
 * @module test/security/card-decisions-race
 * Cards and decisions under attack over real HTTP (src/card/*, src/server/routes/actions.ts):
 * concurrent decisions, decisions racing TTL expiry and turn cancellation (one resolution, no permit
 * leak, the tool run at most once), answers from a child of the home or from another tree, request ids
 * replayed after a real server process restart, and the API token offered as the approver token.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { TypedEvent } from "../../src/bus/bus.ts";
import { harnessSse, openSse, startHarness, waitForBus, type Harness, type SseStream } from "../harness.ts";
import { decide } from "../integration/gate-helpers.ts";
import { serveFixture } from "../harness-serve.ts";

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

/** Every root session's first model turn: a shell call that appends a line to ran.txt (smart mode asks). */
const APPEND = `
turns:
  - tool_calls: [{ name: developer__shell, arguments: { command: "echo ran >> ran.txt" } }]
  - text: "root done"
`;

function lines(file: string): number {
  return existsSync(file) ? readFileSync(file, "utf8").split("\n").filter(Boolean).length : 0;
}

async function harness(extra: Record<string, unknown> = {}): Promise<Harness> {
  return startHarness({
    config: { provider: { name: "scripted", script: "turns.yaml" }, mode: "smart", sandbox: "workspace-write", ...extra },
    files: { "turns.yaml": APPEND },
  });
}

/** A root session in its own workspace whose turn is parked on a card; returns the session, its reply stream and the card. */
async function parked(hh: Harness, name: string): Promise<{ id: string; ws: string; reply: SseStream; card: any }> {
  const ws = join(hh.dataDir, `ws-${name}`);
  mkdirSync(ws, { recursive: true });
  const s = await hh.createSession({ workspace: ws, mode: "smart", sandbox: "workspace-write" });
  const reply = await harnessSse(hh, `/sessions/${s.id}/reply`, { method: "POST", json: { message: "go" } });
  const card = (await reply.waitFor((e) => e.event === "action_required")).data;
  return { id: s.id, ws, reply, card };
}

/** After every turn ended: nothing in flight, no card pending, no permit held. */
async function settled(hh: Harness): Promise<void> {
  await waitForBus(hh.rt, () => hh.rt.inflight.size() === 0 && hh.rt.permits.inUse === 0);
  expect(hh.rt.inflight.size()).toBe(0);
  expect(hh.rt.permits.inUse).toBe(0);
  expect(hh.rt.permits.waiting).toBe(0);
  expect(hh.rt.cards.size).toBe(0);
}

function resolvedEvents(hh: Harness, sessionId: string, requestId: string) {
  return hh.rt.bus.since(sessionId, 0)!.filter((e): e is TypedEvent<"action_resolved"> => e.type === "action_resolved" && e.data.request_id === requestId);
}

describe("racing decisions (held)", () => {
  test("two concurrent decisions: exactly one 200, the other 409; the call runs at most once", async () => {
    h = await harness();
    const runs = await Promise.all(["a", "b", "c"].map((n) => parked(h!, n)));
    for (const [i, p] of runs.entries()) {
      // allow+allow, allow+deny, deny+allow: posted together
      const pair: ("allow_once" | "deny")[] = [["allow_once", "allow_once"], ["allow_once", "deny"], ["deny", "allow_once"]][i] as any;
      const answers = await Promise.all(pair.map((d) => decide(h!, p.id, p.card.request_id, d)));
      expect(answers.map((a) => a.status).sort()).toEqual([200, 409]);
      const winner = answers.find((a) => a.status === 200)!.body.decision;
      const fin = await p.reply.waitFor((e) => e.event === "turn_finished");
      expect(fin.data.status).toBe("completed");
      expect(lines(join(p.ws, "ran.txt"))).toBe(winner === "allow_once" ? 1 : 0);
      expect(resolvedEvents(h!, p.id, p.card.request_id).map((e) => e.data.decision)).toEqual([winner]);
      p.reply.close();
    }
    await settled(h);
  });

  test("decisions racing the TTL: each card ends once, as the one accepted answer or as expired", async () => {
    h = await harness({ approvals: { ttl_seconds: 1 } });
    const offsets = [-20, -2, 0, 2, 20];
    const runs = await Promise.all(offsets.map((_, i) => parked(h!, `t${i}`)));
    const answers = await Promise.all(
      runs.map(async (p, i) => {
        const at = Date.parse(p.card.expires_at) + offsets[i]!;
        await new Promise((r) => setTimeout(r, Math.max(0, at - Date.now())));
        return decide(h!, p.id, p.card.request_id, "allow_once");
      }),
    );
    for (const [i, p] of runs.entries()) {
      const a = answers[i]!;
      expect([200, 404]).toContain(a.status);
      await p.reply.waitFor((e) => e.event === "turn_finished");
      const ends = resolvedEvents(h, p.id, p.card.request_id).map((e) => e.data.decision);
      const shell = h.rt.bus.since(p.id, 0)!.filter((e): e is TypedEvent<"tool_result"> => e.type === "tool_result" && e.data.tool === "developer__shell");
      if (a.status === 200) {
        expect(ends).toEqual(["allow_once"]);
        expect(shell.map((e) => e.data.ok)).toEqual([true]);
        expect(lines(join(p.ws, "ran.txt"))).toBe(1);
      } else {
        expect(a.body.error).toBe("expired");
        expect(ends).toEqual(["expired"]);
        expect(shell.map((e) => (e.data.error as { code?: string } | undefined)?.code)).toEqual(["expired"]);
        expect(lines(join(p.ws, "ran.txt"))).toBe(0);
      }
      // an answer after the end is never a second resolution
      expect((await decide(h, p.id, p.card.request_id, "deny")).status).not.toBe(200);
      p.reply.close();
    }
    await settled(h);
  });

  test("a decision racing the turn's cancel: one resolution, the call at most once, no permit left", async () => {
    h = await harness();
    const runs = await Promise.all(["x", "y", "z", "w"].map((n) => parked(h!, n)));
    for (const [i, p] of runs.entries()) {
      const cancel = () => h!.api(`/sessions/${p.id}/cancel`, { method: "POST" });
      const allow = () => decide(h!, p.id, p.card.request_id, "allow_once");
      // alternate which request leaves first
      const [a, c] = i % 2 === 0 ? await Promise.all([allow(), cancel()]) : (await Promise.all([cancel(), allow()])).reverse();
      expect([200, 409]).toContain((a as { status: number }).status);
      expect((c as Response).status).toBe(200);
      const fin = await p.reply.waitFor((e) => e.event === "turn_finished");
      expect(fin.data.status).toBe("cancelled");
      const ends = resolvedEvents(h, p.id, p.card.request_id).map((e) => e.data.decision);
      expect(ends.length).toBe(1);
      expect(ends[0]).toBe((a as { status: number }).status === 200 ? "allow_once" : "cancelled");
      expect(lines(join(p.ws, "ran.txt"))).toBeLessThanOrEqual(1);
      p.reply.close();
    }
    await settled(h);
  });
});

describe("who may answer (held)", () => {
  test("a child of the home, a grandchild of it, and a root of another tree are outside the scope", async () => {
    h = await startHarness({
      config: { provider: { name: "scripted", script: "turns.yaml" }, mode: "smart" },
      files: {
        "turns.yaml": `
turns:
  - tool_calls: [{ name: subagent__spawn, arguments: { instructions: "child" } }]
  - text: "root done"
subagents:
  - turns:
      - tool_calls: [{ name: developer__write_file, arguments: { path: "made.txt", content: "x" } }]
      - text: "child done"
  - turns:
      - tool_calls: [{ name: developer__write_file, arguments: { path: "other.txt", content: "y" } }]
      - text: "child done"
`,
      },
    });
    const rootA = await h.createSession({ mode: "smart" });
    const replyA = await harnessSse(h, `/sessions/${rootA.id}/reply`, { method: "POST", json: { message: "go" } });
    const cardA = (await replyA.waitFor((e) => e.event === "action_required")).data;
    const home = cardA.home_session_id as string;
    expect(home).not.toBe(rootA.id);
    // a second tree, with its own card
    const rootB = await h.createSession({ mode: "smart" });
    const replyB = await harnessSse(h, `/sessions/${rootB.id}/reply`, { method: "POST", json: { message: "go" } });
    const cardB = (await replyB.waitFor((e) => e.event === "action_required")).data;

    // sessions an API caller can create under the home: a child and a grandchild of it
    const childOfHome = await h.createSession({ parent_session_id: home });
    const grandOfHome = await h.createSession({ parent_session_id: childOfHome.id });
    for (const who of [childOfHome.id, grandOfHome.id, rootB.id, cardB.home_session_id]) {
      for (const d of ["allow_once", "deny"] as const) {
        expect(await decide(h, who, cardA.request_id, d)).toMatchObject({ status: 403, body: { error: "outside_scope" } });
      }
    }
    // tree A's surfaces cannot answer tree B's card either
    for (const who of [rootA.id, home]) expect(await decide(h, who, cardB.request_id, "allow_once")).toMatchObject({ status: 403, body: { error: "outside_scope" } });
    // nothing changed: both cards still pending, each listed only at its own surfaces
    expect(h.rt.cards.size).toBe(2);
    const listed = async (sid: string) => ((await (await h!.api(`/sessions/${sid}/actions`)).json()) as any).actions.map((c: any) => c.request_id);
    expect(await listed(childOfHome.id)).toEqual([]);
    expect(await listed(rootB.id)).toEqual([cardB.request_id]);
    expect(existsSync(join(h.workspace, "made.txt"))).toBe(false);
    // the real surfaces still work
    expect((await decide(h, rootA.id, cardA.request_id, "deny")).status).toBe(200);
    expect((await decide(h, cardB.home_session_id, cardB.request_id, "deny")).status).toBe(200);
    await replyA.waitFor((e) => e.event === "turn_finished");
    await replyB.waitFor((e) => e.event === "turn_finished");
    replyA.close();
    replyB.close();
    await settled(h);
  });

  test("the API token offered as the approver token is refused; the approver token allows", async () => {
    h = await startHarness({
      config: { provider: { name: "scripted", script: "turns.yaml" }, mode: "autonomous" },
      files: { "turns.yaml": `turns:\n  - tool_calls: [{ name: developer__read_file, arguments: { path: ".env" } }]\n  - text: done\n` },
      workspaceFiles: { ".env": "SECRET=1" },
    });
    expect(h.rt.tokens.apiToken).not.toBe(h.rt.tokens.approverToken);
    const s = await h.createSession({ mode: "autonomous" });
    const reply = await harnessSse(h, `/sessions/${s.id}/reply`, { method: "POST", json: { message: "go" } });
    const card = (await reply.waitFor((e) => e.event === "action_required")).data;
    expect(card.requires_user_proof).toBe(true);
    for (const proof of [h.token, `${h.rt.tokens.approverToken}x`, `Bearer ${h.rt.tokens.approverToken}`, ""]) {
      const error = proof ? "user_proof_invalid" : "user_proof_required"; // a wrong token and none are told apart
      expect(await decide(h, s.id, card.request_id, "allow_once", proof || undefined)).toMatchObject({ status: 403, body: { error } });
    }
    // the approver token as the bearer token does not open the API either
    const asBearer = await h.api(`/sessions/${s.id}/actions/${card.request_id}`, {
      method: "POST",
      json: { decision: "allow_once" },
      headers: { authorization: `Bearer ${h.rt.tokens.approverToken}`, "X-Airlock-Approver": h.rt.tokens.approverToken },
    });
    expect(asBearer.status).toBe(401);
    expect(h.rt.cards.size).toBe(1);
    expect(await decide(h, s.id, card.request_id, "allow_once", h.rt.tokens.approverToken)).toMatchObject({ status: 200 });
    await reply.waitFor((e) => e.event === "turn_finished");
    reply.close();
  });
});

describe("request ids after a server process restart (held)", () => {
  const { dir, serve } = serveFixture("airlock-card-restart-");

  test("a pending and a decided request id replayed to a restarted server are 404, never 200; nothing runs", async () => {
    const ws = join(dir, "ws");
    mkdirSync(ws);
    writeFileSync(join(dir, "airlock.yaml"), "provider: { name: scripted, script: turns.yaml }\nmode: smart\nsandbox: workspace-write\n");
    writeFileSync(join(dir, "turns.yaml"), APPEND);
    const first = await serve();
    const token = readFileSync(join(dir, "api-token"), "utf8").trim();
    const approver = readFileSync(join(dir, "approver-token"), "utf8").trim();
    const auth = { authorization: `Bearer ${token}`, "content-type": "application/json", "X-Airlock-Approver": approver };
    const post = (url: string, path: string, body: unknown) => fetch(url + path, { method: "POST", headers: auth, body: JSON.stringify(body) });
    const start = async (url: string) => {
      const s = (await (await post(url, "/sessions", { workspace: ws })).json()) as { id: string };
      const reply = await openSse(`${url}/sessions/${s.id}/reply`, { method: "POST", headers: auth, body: JSON.stringify({ message: "go" }) });
      return { id: s.id, reply, card: (await reply.waitFor((e) => e.event === "action_required")).data };
    };
    // one card decided (deny) and one left pending, then the server is killed
    const decided = await start(first.url);
    expect((await post(first.url, `/sessions/${decided.id}/actions/${decided.card.request_id}`, { decision: "deny" })).status).toBe(200);
    await decided.reply.waitFor((e) => e.event === "turn_finished");
    const pending = await start(first.url);
    first.proc.kill("SIGKILL");
    await first.proc.exited;
    await pending.reply.ended;

    const second = await serve();
    for (const p of [decided, pending]) {
      for (const d of ["allow_once", "deny"]) {
        const r = await post(second.url, `/sessions/${p.id}/actions/${p.card.request_id}`, { decision: d });
        expect(r.status).toBe(404);
        expect(((await r.json()) as any).error).toBe("not_found");
      }
      const listed = (await (await fetch(`${second.url}/sessions/${p.id}/actions`, { headers: auth })).json()) as any;
      expect(listed.actions).toEqual([]);
    }
    expect(lines(join(ws, "ran.txt"))).toBe(0);
    second.proc.kill("SIGTERM");
    expect(await second.proc.exited).toBe(0);
  });
});
