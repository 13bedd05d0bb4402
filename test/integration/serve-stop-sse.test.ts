/**
 * SIGTERM to `airlock serve` while a card is pending and SSE streams are open (a real server process,
 * real HTTP clients): every stream — the turn's `/reply`, the session's `/events`, the console's feed —
 * gets the events the shutdown publishes (the card's end, the turn's `error` and `turn_finished`
 * `cancelled`) and then a clean end of the chunked body (no reset, no premature close).
 */
import { expect, test } from "bun:test";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createParser } from "eventsource-parser";
import { serveFixture } from "../harness-serve.ts";

const fixture = serveFixture("airlock-stop-sse-");
const { dir } = fixture;

interface Reading {
  events: { event: string; data: any }[];
  /** Resolves with how the body ended: "clean" (the reader's done) or the error's text. */
  ended: Promise<string>;
  waitFor(pred: (e: { event: string; data: any }) => boolean, ms?: number): Promise<void>;
}

/** Reads an SSE body to its end, telling a clean end from a transport error. */
async function read(url: string, init: RequestInit): Promise<Reading> {
  const res = await fetch(url, init);
  expect(res.status).toBe(200);
  const events: { event: string; data: any }[] = [];
  const waiters: { pred: (e: { event: string; data: any }) => boolean; resolve: () => void }[] = [];
  const parser = createParser({
    onEvent(m) {
      const ev = { event: m.event ?? "message", data: m.data ? JSON.parse(m.data) : null };
      events.push(ev);
      for (const w of [...waiters]) if (w.pred(ev)) (waiters.splice(waiters.indexOf(w), 1), w.resolve());
    },
  });
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  const ended = (async () => {
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return "clean";
        parser.feed(value);
      }
    } catch (e) {
      return `error: ${(e as Error)?.message ?? String(e)} (${(e as { code?: string })?.code ?? ""})`;
    }
  })();
  return {
    events,
    ended,
    waitFor(pred, ms = 30_000) {
      if (events.some(pred)) return Promise.resolve();
      return new Promise<void>((resolve, reject) => {
        const t = setTimeout(() => reject(new Error(`timed out; got ${events.map((e) => e.event).join(", ")}`)), ms);
        waiters.push({ pred, resolve: () => (clearTimeout(t), resolve()) });
      });
    },
  };
}

test("SIGTERM with a pending card: each SSE stream gets the card's end and the turn's end, then ends cleanly", async () => {
  mkdirSync(join(dir, "ws"));
  writeFileSync(join(dir, "airlock.yaml"), "mode: smart\nprovider: { name: scripted, script: turns.yaml }\n");
  writeFileSync(
    join(dir, "turns.yaml"),
    ["turns:", '  - tool_calls: [{ name: developer__write_file, arguments: { path: "out.txt", content: "w" } }]', '  - text: "done"', ""].join("\n"),
  );
  const sp = await fixture.serve(["--config", join(dir, "airlock.yaml")]);
  const h = { authorization: `Bearer ${readFileSync(join(dir, "api-token"), "utf8").trim()}`, "content-type": "application/json" };
  const s = (await (await fetch(`${sp.url}/sessions`, { method: "POST", headers: h, body: JSON.stringify({ workspace: join(dir, "ws") }) })).json()) as { id: string };
  const events = await read(`${sp.url}/sessions/${s.id}/events`, { headers: h });
  const console_ = await read(`${sp.url}/console/events`, { headers: h });
  await events.waitFor((e) => e.event === "snapshot");
  await console_.waitFor((e) => e.event === "snapshot");
  const reply = await read(`${sp.url}/sessions/${s.id}/reply`, { method: "POST", headers: h, body: JSON.stringify({ message: "write it" }) });
  for (const r of [reply, events, console_]) await r.waitFor((e) => e.event === "action_required");

  sp.proc.kill("SIGTERM");
  const ends = await Promise.all([reply.ended, events.ended, console_.ended]);
  expect(await sp.proc.exited).toBe(0);
  expect(ends).toEqual(["clean", "clean", "clean"]);
  for (const [name, r] of [["reply", reply], ["events", events], ["console", console_]] as const) {
    const names = r.events.map((e) => e.event);
    const tail = names.slice(names.indexOf("action_required") + 1);
    expect({ name, tail }).toEqual({ name, tail: expect.arrayContaining(["action_resolved", "error", "turn_finished"]) });
    const finished = r.events.findLast((e) => e.event === "turn_finished")!;
    expect({ name, status: finished.data.status }).toEqual({ name, status: "cancelled" });
  }
}, 120_000);

test("SIGTERM with a client that does not read its stream: the server still exits by its close deadline, the readers' streams end cleanly", async () => {
  const ws = join(dir, "ws2");
  mkdirSync(ws);
  const config = join(dir, "airlock2.yaml");
  writeFileSync(config, "mode: smart\nprovider: { name: scripted, script: turns2.yaml }\n");
  // an answer larger than the loopback socket buffers (both ends) take: a snapshot holding it cannot be written
  // to a client that does not read
  const big = "x".repeat(12 * 1024 * 1024);
  writeFileSync(
    join(dir, "turns2.yaml"),
    ["turns:", `  - text: "${big}"`, '  - tool_calls: [{ name: developer__write_file, arguments: { path: "out.txt", content: "w" } }]', '  - text: "done"', ""].join("\n"),
  );
  const sp = await fixture.serve(["--config", config]);
  const token = readFileSync(join(dir, "api-token"), "utf8").trim();
  const h = { authorization: `Bearer ${token}`, "content-type": "application/json" };
  const s = (await (await fetch(`${sp.url}/sessions`, { method: "POST", headers: h, body: JSON.stringify({ workspace: ws }) })).json()) as { id: string };
  const first = await read(`${sp.url}/sessions/${s.id}/reply`, { method: "POST", headers: h, body: JSON.stringify({ message: "big" }) });
  expect(await first.ended).toBe("clean");

  // a client that asks for the session's events (a snapshot with the big message) and never reads a byte
  const { port, hostname } = new URL(sp.url);
  const stuck = await Bun.connect({
    hostname,
    port: Number(port),
    socket: {
      data() {},
      open(sock) {
        sock.pause(); // nothing is read from the kernel: the server's writes fill the buffers and wait
      },
    },
  });
  stuck.write(`GET /sessions/${s.id}/events HTTP/1.1\r\nHost: ${hostname}:${port}\r\nAuthorization: Bearer ${token}\r\n\r\n`);

  const events = await read(`${sp.url}/sessions/${s.id}/events`, { headers: h });
  const reply = await read(`${sp.url}/sessions/${s.id}/reply`, { method: "POST", headers: h, body: JSON.stringify({ message: "write it" }) });
  for (const r of [reply, events]) await r.waitFor((e) => e.event === "action_required", 60_000);

  const t0 = Date.now();
  sp.proc.kill("SIGTERM");
  expect(await sp.proc.exited).toBe(0);
  const took = Date.now() - t0;
  stuck.end();
  expect(await Promise.all([reply.ended, events.ended])).toEqual(["clean", "clean"]);
  for (const r of [reply, events]) expect(r.events.findLast((e) => e.event === "turn_finished")?.data.status).toBe("cancelled");
  // the close deadline is 5 s after SIGTERM; the rest of the shutdown (store, WAL) well under the margin
  expect(took).toBeLessThan(9_000);
}, 120_000);
