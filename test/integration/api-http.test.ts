/**
 * The HTTP API's front door over real HTTP on an ephemeral loopback port: auth, the DNS-rebinding
 * host guard, body validation and size, concurrency (409), cancel, SSE snapshot and Last-Event-ID.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { startFakeOpenAI, textChunks, type FakeOpenAI } from "../fixtures/fake-openai.ts";
import { harnessSse, startHarness, type Harness } from "../harness.ts";

let h: Harness | undefined;
let fake: FakeOpenAI | undefined;
afterEach(async () => {
  await h?.close();
  await fake?.close();
  h = fake = undefined;
});

/** A fake model whose answers wait until `release()` is called (a turn we can hold in flight). */
function heldModel() {
  let release!: () => void;
  let entered!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const inModel = new Promise<void>((r) => (entered = r));
  const server = startFakeOpenAI(async () => {
    entered();
    await gate;
    return textChunks("released answer");
  });
  return { server, release, inModel };
}

function harnessWith(url: string, extra: Record<string, unknown> = {}) {
  return startHarness({ config: { provider: { name: "openai", base_url: url, max_retries: 0 }, ...extra } });
}

describe("api auth and host guard", () => {
  test("/health needs no token; every other route answers 401 without the right bearer token", async () => {
    h = await startHarness();
    const health = await fetch(`${h.url}/health`);
    expect(health.status).toBe(200);
    expect((await health.json()) as any).toMatchObject({ status: "ok" });
    for (const auth of [undefined, "Bearer wrong-token", `Basic ${h.token}`, `Bearer ${h.token}x`]) {
      const res = await fetch(`${h.url}/sessions`, { headers: auth ? { authorization: auth } : {} });
      expect(res.status).toBe(401);
      expect(((await res.json()) as any).error).toBe("unauthorized");
    }
    expect((await h.api("/sessions")).status).toBe(200);
  });

  test("a foreign Host header is refused with 421 forbidden_host, loopback names with any port pass", async () => {
    h = await startHarness();
    for (const host of ["evil.example", "evil.example:7420", "127.0.0.1.evil.example", "localhost.evil.example"]) {
      const res = await h.api("/sessions", { headers: { host } });
      expect(res.status).toBe(421);
      expect((await res.json()) as any).toMatchObject({ error: "forbidden_host" });
      // also before auth, and on /health
      expect((await fetch(`${h.url}/health`, { headers: { host } })).status).toBe(421);
    }
    for (const host of ["127.0.0.1", "localhost:9999", "[::1]:1234", "LOCALHOST"]) {
      expect((await h.api("/sessions", { headers: { host } })).status).toBe(200);
    }
  });
});

describe("api body validation", () => {
  test("bad bodies get 400 naming the failing field", async () => {
    h = await startHarness();
    const bad = await h.api("/sessions", { method: "POST", json: { mode: "yolo" } });
    expect(bad.status).toBe(400);
    const body = (await bad.json()) as any;
    expect(body.error).toBe("bad_request");
    expect(body.message).toContain("mode");
    const unknown = await h.api("/sessions", { method: "POST", json: { modee: "smart" } });
    expect(unknown.status).toBe(400);
    expect(((await unknown.json()) as any).message).toContain("modee");
    const notJson = await h.api("/sessions", { method: "POST", body: "{nope", headers: { "content-type": "application/json" } });
    expect(notJson.status).toBe(400);
    expect(((await notJson.json()) as any).message).toContain("not valid JSON");
    const s = await h.createSession();
    const noMsg = await h.api(`/sessions/${s.id}/reply`, { method: "POST", json: {} });
    expect(noMsg.status).toBe(400);
    expect(((await noMsg.json()) as any).message).toContain("message");
    const missingWs = await h.api("/sessions", { method: "POST", json: { workspace: "/no/such/dir" } });
    expect(missingWs.status).toBe(400);
    expect((await h.api("/sessions/ses_nope")).status).toBe(404);
  });

  test("a body over limits.max_body_bytes gets 413", async () => {
    h = await startHarness({ config: { limits: { max_body_bytes: 1024 } } });
    const s = await h.createSession();
    const res = await h.api(`/sessions/${s.id}/reply`, { method: "POST", json: { message: "x".repeat(5000) } });
    expect(res.status).toBe(413);
    expect(((await res.json()) as any).error).toBe("payload_too_large");
  });

  test("a private session is refused with a non-loopback provider and a child cannot change tier", async () => {
    h = await startHarness({ config: { provider: { name: "openai", base_url: "https://api.example.com/v1" } } });
    const res = await h.api("/sessions", { method: "POST", json: { workspace: h.workspace, privacy: "private" } });
    expect(res.status).toBe(400);
    expect(((await res.json()) as any).error).toBe("privacy_violation");
    const parent = await h.createSession();
    const child = await h.api("/sessions", { method: "POST", json: { parent_session_id: parent.id, privacy: "private" } });
    expect(child.status).toBe(400);
    expect(((await child.json()) as any).error).toBe("privacy_violation");
  });
});

describe("api turns", () => {
  test("a second reply while a turn is in flight gets 409; cancel ends the turn and leaves the in-flight registry", async () => {
    const m = heldModel();
    fake = m.server;
    h = await harnessWith(fake.url);
    const s = await h.createSession();
    const first = await harnessSse(h, `/sessions/${s.id}/reply`, { method: "POST", json: { message: "one" } });
    await first.waitFor((e) => e.event === "turn_started");
    await m.inModel;
    expect(h.rt.inflight.has(s.id)).toBe(true);
    const second = await h.api(`/sessions/${s.id}/reply`, { method: "POST", json: { message: "two" } });
    expect(second.status).toBe(409);
    expect(((await second.json()) as any).error).toBe("session_busy");
    const cancel = await h.api(`/sessions/${s.id}/cancel`, { method: "POST" });
    expect((await cancel.json()) as any).toEqual({ session_id: s.id, cancelled: true });
    const fin = await first.waitFor((e) => e.event === "turn_finished");
    expect(fin.data.status).toBe("cancelled");
    expect(h.rt.inflight.has(s.id)).toBe(false);
    expect((await h.rt.store.listTurns(s.id))[0]!.status).toBe("cancelled");
    m.release();
    // a new turn may start now
    const again = await harnessSse(h, `/sessions/${s.id}/reply`, { method: "POST", json: { message: "three" } });
    expect((await again.waitFor((e) => e.event === "turn_finished")).data).toMatchObject({ status: "completed", answer: "released answer" });
  });

  test("a client leaving /reply does not end the turn; /events shows it finishing", async () => {
    const m = heldModel();
    fake = m.server;
    h = await harnessWith(fake.url);
    const s = await h.createSession();
    const reply = await harnessSse(h, `/sessions/${s.id}/reply`, { method: "POST", json: { message: "go" } });
    await reply.waitFor((e) => e.event === "turn_started");
    await m.inModel;
    reply.close();
    await reply.ended;
    const obs = await harnessSse(h, `/sessions/${s.id}/events`);
    const snap = await obs.waitFor((e) => e.event === "snapshot");
    expect(snap.data.session.id).toBe(s.id);
    expect(snap.data.in_flight).toBe(true);
    expect(snap.data.messages.map((x: any) => x.content)).toEqual(["go"]);
    expect(snap.data.pending_actions).toEqual([]);
    m.release();
    const fin = await obs.waitFor((e) => e.event === "turn_finished");
    expect(fin.data).toMatchObject({ session_id: s.id, status: "completed", answer: "released answer" });
    obs.close();
  });

  test("/events resumes from Last-Event-ID with the missed events, or a fresh snapshot when it cannot", async () => {
    fake = startFakeOpenAI(() => textChunks("first answer", { pieces: 4 }));
    h = await harnessWith(fake.url);
    const s = await h.createSession();
    const reply = await harnessSse(h, `/sessions/${s.id}/reply`, { method: "POST", json: { message: "hi" } });
    await reply.ended;
    const all = reply.events;
    expect(all.at(-1)!.event).toBe("turn_finished");
    const cut = all[2]!.id!;
    const resumed = await harnessSse(h, `/sessions/${s.id}/events`, { headers: { "last-event-id": cut } });
    await resumed.waitFor((e) => e.event === "turn_finished");
    expect(resumed.events.map((e) => e.id)).toEqual(all.slice(3).map((e) => e.id));
    expect(resumed.events.some((e) => e.event === "snapshot")).toBe(false);
    resumed.close();
    const stale = await harnessSse(h, `/sessions/${s.id}/events`, { headers: { "last-event-id": "999999" } });
    const snap = await stale.waitFor(() => true);
    expect(snap.event).toBe("snapshot");
    expect(snap.id).toBe(all.at(-1)!.id);
    expect(snap.data.messages.map((x: any) => x.role)).toEqual(["user", "assistant"]);
    stale.close();
  });

  test("idle SSE streams get comment heartbeats", async () => {
    h = await startHarness({ heartbeatMs: 20 });
    const s = await h.createSession();
    const obs = await harnessSse(h, `/sessions/${s.id}/events`);
    await obs.waitFor((e) => e.event === "snapshot");
    const until = new Promise<void>((resolve) => {
      const t = setInterval(() => {
        if (obs.comments() >= 2) {
          clearInterval(t);
          resolve();
        }
      }, 5);
    });
    await until;
    expect(obs.comments()).toBeGreaterThanOrEqual(2);
    obs.close();
  });
});

describe("api cards", () => {
  test("a parked card reaches the reply stream and a late observer's snapshot; answering it lets the turn finish", async () => {
    h = await startHarness({
      config: { provider: { name: "scripted", script: "turns.yaml" }, mode: "smart" },
      files: {
        "turns.yaml": `
turns:
  - tool_calls: [{ name: developer__write_file, arguments: { path: "out.txt", content: "written" } }]
  - text: "wrote it"
`,
      },
    });
    const s = await h.createSession();
    const reply = await harnessSse(h, `/sessions/${s.id}/reply`, { method: "POST", json: { message: "write" } });
    const card = await reply.waitFor((e) => e.event === "action_required");
    expect(card.data).toMatchObject({ home_session_id: s.id, surfaced_in: s.id, tool: "developer__write_file", user_only: true });
    const obs = await harnessSse(h, `/sessions/${s.id}/events`);
    const snap = await obs.waitFor((e) => e.event === "snapshot");
    expect(snap.data.pending_actions.map((c: any) => c.request_id)).toEqual([card.data.request_id]);
    obs.close();
    const res = await h.api(`/sessions/${s.id}/actions/${card.data.request_id}`, { method: "POST", json: { decision: "allow_once" } });
    expect(res.status).toBe(200);
    const fin = await reply.waitFor((e) => e.event === "turn_finished");
    expect(fin.data).toMatchObject({ status: "completed", answer: "wrote it" });
    expect(await Bun.file(`${h.workspace}/out.txt`).text()).toBe("written");
  });
});
