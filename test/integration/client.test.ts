/**
 * The typed client (client/index.ts) against a real server on loopback: sessions, a turn's stream, a card
 * answered at its root surface with `allow_session`, the session rules, audit, schedules and runs; every
 * failure an AirlockApiError with the server's code and status; `events()` surfacing the snapshot and,
 * when the server goes away and comes back, reconnecting with Last-Event-ID to get what it missed; and the
 * bundle for Node (client/dist/index.js) used from a real `node` process.
 */
import { afterEach, expect, test } from "bun:test";
import { join } from "node:path";
import { AirlockApiError, createClient, type SessionEvent } from "../../client/index.ts";
import { buildClient, CLIENT_BUNDLE } from "../../client/build.ts";
import { startServer } from "../../src/server/serve.ts";
import { startHarness, type Harness } from "../harness.ts";

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const WRITE_TURNS = `turns:\n  - tool_calls: [{ name: developer__write_file, arguments: { path: "a.txt", content: "hi" } }]\n  - text: "wrote it"\n  - text: "second answer"\n`;

async function harness(): Promise<Harness> {
  h = await startHarness({ config: { provider: { name: "scripted", script: "turns.yaml" }, mode: "approve" }, files: { "turns.yaml": WRITE_TURNS } });
  return h;
}

test("sessions, a turn's stream, a card answered allow_session at its root surface, rules, audit, schedules and runs", async () => {
  const h = await harness();
  const airlock = createClient({ url: h.url, token: h.token, approverToken: h.rt.tokens.approverToken });
  expect((await airlock.health()).status).toBe("ok");
  expect((await airlock.openapi()).openapi).toBe("3.1.0");

  const s = await airlock.sessions.create({ workspace: h.workspace, title: "client" });
  expect(s.mode).toBe("approve");
  expect((await airlock.sessions.list({ limit: 5 })).sessions.map((x) => x.id)).toContain(s.id);

  const turn = await airlock.sessions.reply(s.id, "write a.txt");
  const seen: string[] = [];
  for await (const ev of turn) {
    seen.push(ev.type);
    if (ev.type === "action_required") {
      expect(ev.data.suggested_rule).toBeString();
      expect((await airlock.cards.list()).actions.map((c) => c.request_id)).toEqual([ev.data.request_id]);
      expect((await airlock.cards.list(s.id)).actions).toHaveLength(1);
      const out = await airlock.cards.answer(ev.data.request_id, "allow_session");
      expect(out).toMatchObject({ request_id: ev.data.request_id, decision: "allow_session", decided_in: s.id });
    }
    if (ev.type === "turn_finished") expect(ev.data).toMatchObject({ status: "completed", answer: "wrote it" });
  }
  expect(seen[0]).toBe("turn_started");
  expect(seen.at(-1)).toBe("turn_finished");
  expect(seen).toContain("action_resolved");

  const detail = await airlock.sessions.get(s.id);
  expect(detail.in_flight).toBe(false);
  expect(detail.turns.map((t) => t.status)).toEqual(["completed"]);
  const { rules } = await airlock.sessions.rules(s.id);
  expect(rules).toHaveLength(1);
  expect((await airlock.sessions.removeRule(s.id, rules[0]!.id)).removed.id).toBe(rules[0]!.id);
  expect(await airlock.sessions.cancel(s.id)).toEqual({ session_id: s.id, cancelled: false });
  const audit = await airlock.audit({ session: s.id, decision: "allow_session", limit: 10 });
  expect(audit.audit.map((r) => r.kind)).toContain("card_decision");
  expect((await airlock.schedules.list()).schedules).toEqual([]);
  expect((await airlock.runs.list({ limit: 1 })).runs).toEqual([]);

  // failures: one error class with the server's code and status
  const fail = async (p: Promise<unknown>) => {
    const e = await p.then(
      () => null,
      (x: unknown) => x,
    );
    expect(e).toBeInstanceOf(AirlockApiError);
    return e as AirlockApiError;
  };
  expect(await fail(airlock.sessions.get("ses_nope"))).toMatchObject({ code: "session_not_found", status: 404 });
  expect(await fail(airlock.runs.get("run_nope"))).toMatchObject({ code: "not_found", status: 404 });
  const bad = await fail(airlock.sessions.create({ workspace: "relative/dir" }));
  expect(bad).toMatchObject({ code: "bad_request", status: 400 });
  expect(bad.message).toContain("workspace");
  expect(bad.details.fields).toEqual(["workspace"]);
  expect(await fail(createClient({ url: h.url, token: "wrong" }).sessions.list())).toMatchObject({ code: "unauthorized", status: 401 });
  expect(await fail(airlock.audit({ limit: 0 }))).toMatchObject({ code: "bad_request", status: 400 });
  expect(await fail(airlock.sessions.removeRule(s.id, "srl_nope"))).toMatchObject({ code: "not_found", status: 404 });
  const stopped = `http://127.0.0.1:${h.server.port}`;
  await h.server.stop();
  expect(await fail(createClient({ url: stopped, token: h.token }).health())).toMatchObject({ code: "server_unreachable", status: 0 });
});

test("events() opens with the snapshot, and after the server goes away and comes back resumes with Last-Event-ID (no second snapshot)", async () => {
  const h = await harness();
  const airlock = createClient({ url: h.url, token: h.token, approverToken: h.rt.tokens.approverToken });
  const s = await airlock.sessions.create({ workspace: h.workspace });
  const ac = new AbortController();
  const got: SessionEvent[] = [];
  let snapshotSeen!: () => void;
  const snapshot = new Promise<void>((r) => (snapshotSeen = r));
  const follow = (async () => {
    for await (const ev of airlock.events(s.id, { signal: ac.signal, baseDelayMs: 20, maxDelayMs: 200 })) {
      got.push(ev);
      if (ev.type === "snapshot") snapshotSeen();
      if (ev.type === "action_required") await airlock.cards.answer(ev.data.request_id, "allow_once", { sessionId: s.id });
      if (ev.type === "turn_finished") ac.abort();
    }
  })();
  await snapshot;
  expect(got[0]).toMatchObject({ type: "snapshot", data: { session: { id: s.id }, in_flight: false, pending_actions: [] } });

  // the server goes away; a turn starts meanwhile and raises its card; the server comes back on the same port
  const port = h.server.port;
  await h.server.stop();
  const started = await h.rt.startTurn(s.id, "write a.txt");
  await new Promise<void>((resolve) => {
    const off = h.rt.bus.subscribe(s.id, (ev) => ev.type === "action_required" && (off(), resolve()));
  });
  startServer(h.rt, { host: "127.0.0.1", port });
  await follow;
  await started.done;

  const types = got.map((e) => e.type);
  expect(types.filter((t) => t === "snapshot")).toHaveLength(1);
  expect(types.slice(1, 2)).toEqual(["turn_started"]);
  expect(types).toContain("action_required");
  expect(types).toContain("action_resolved");
  expect(types.at(-1)).toBe("turn_finished");
  const ids = got.slice(1).map((e) => Number(e.id.split("-").at(-1)));
  expect(ids).toEqual([...ids].sort((a, b) => a - b));

  // a resume the server cannot serve (an id of another process) surfaces a fresh snapshot
  const again = airlock.events(s.id, { lastEventId: "zzzz-9" });
  const first = await again.next();
  expect(first.value).toMatchObject({ type: "snapshot", data: { session: { id: s.id } } });
  await again.return(undefined);

  // a 4xx ends the iteration with the error at once (no retry)
  const unknown = await airlock.events("ses_nope", { baseDelayMs: 20 }).next().then(
    () => null,
    (e: unknown) => e,
  );
  expect(unknown).toBeInstanceOf(AirlockApiError);
  expect(unknown).toMatchObject({ code: "session_not_found", status: 404 });
});

test("the Node bundle (client/dist/index.js) works from a real node process with fetch only", async () => {
  const h = await harness();
  const bytes = await buildClient();
  expect(bytes).toBeGreaterThan(1000);
  const script = `
    const { createClient, AirlockApiError } = await import(${JSON.stringify(CLIENT_BUNDLE)});
    const c = createClient({ url: process.env.URL, token: process.env.TOKEN });
    const s = await c.sessions.create({ workspace: process.env.WS });
    const list = await c.sessions.list();
    let code = null;
    try { await c.sessions.get("ses_nope"); } catch (e) { code = e instanceof AirlockApiError ? e.code + " " + e.status : String(e); }
    console.log(JSON.stringify({ found: list.sessions.some((x) => x.id === s.id), code }));
  `;
  const p = Bun.spawn(["node", "--input-type=module", "-e", script], { env: { PATH: process.env.PATH, URL: h.url, TOKEN: h.token, WS: h.workspace }, stdout: "pipe", stderr: "pipe", cwd: join(import.meta.dir, "..") });
  const [code, out, err] = await Promise.all([p.exited, new Response(p.stdout).text(), new Response(p.stderr).text()]);
  expect(err).toBe("");
  expect(code).toBe(0);
  expect(JSON.parse(out)).toEqual({ found: true, code: "session_not_found 404" });
});
