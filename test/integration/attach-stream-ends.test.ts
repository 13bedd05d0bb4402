/**
 * `airlock attach --plain` (a real process) reads every stream of a stopping server to its end: `airlock serve`
 * stopping ends each SSE stream on its own after what was published to it (SPEC §6), so the console feed may end
 * before the session's stream has delivered the cancelled turn's `turn_finished`. attach used to close every stream
 * as soon as one ended, losing that turn-end line. A small stand-in server (real HTTP, in this test) pins that order:
 * the feed ends first, the session's stream 300 ms later with the turn's end.
 */
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawnAttach } from "./attach-helpers.ts";

const dir = mkdtempSync(join(tmpdir(), "airlock-attach-ends-"));
const main = join(import.meta.dir, "..", "..", "src", "main.ts");
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const SESSION = { id: "ses_stop", parent_session_id: null, title: "", status: "running" };
const sse = (event: string, id: string, data: unknown): string => `event: ${event}\nid: ${id}\ndata: ${JSON.stringify(data)}\n\n`;

test("the session stream's turn_finished after the feed ended is still shown: '■ turn cancelled' before the reconnect line", async () => {
  let stop!: () => void;
  const stopping = new Promise<void>((r) => (stop = r));
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    fetch(req) {
      const path = new URL(req.url).pathname;
      const stream = (body: (write: (s: string) => void) => Promise<void>): Response =>
        new Response(
          new ReadableStream({
            async start(c) {
              const enc = new TextEncoder();
              await body((s) => c.enqueue(enc.encode(s)));
              c.close();
            },
          }),
          { headers: { "content-type": "text/event-stream" } },
        );
      if (path === `/sessions/${SESSION.id}`) return Response.json(SESSION);
      if (path === `/sessions/${SESSION.id}/events`) {
        return stream(async (write) => {
          write(sse("snapshot", "ep-0", { session: SESSION }));
          write(sse("turn_started", "ep-1", { session_id: SESSION.id }));
          await stopping;
          await Bun.sleep(300);
          write(sse("turn_finished", "ep-2", { status: "cancelled", answer: null, error: { code: "cancelled", message: "the runtime is shutting down" } }));
        });
      }
      if (path === "/console/events") {
        return stream(async (write) => {
          write(sse("snapshot", "f-0", { sessions: [SESSION], in_flight: [SESSION.id], pending_actions: [] }));
          await stopping; // ends first, as a stopping server's feed may
        });
      }
      return new Response("gone", { status: 503 });
    },
  });
  const url = `http://127.0.0.1:${server.port}`;
  const a = spawnAttach(main, [SESSION.id, "--plain", "--data-dir", dir, "--url", url], { ...process.env, AIRLOCK_URL: "", NO_COLOR: "1" });
  try {
    await a.waitOut(/^attached to root ses_stop /m);
    stop();
    const dropped = await a.waitOut(/^airlock: the connection to http:\/\/127\.0\.0\.1:\d+ dropped; reconnecting/m);
    const turnEnd = /^\[root\] ■ turn cancelled: the runtime is shutting down$/m.exec(a.out());
    expect(turnEnd?.index ?? -1).toBeGreaterThan(-1);
    expect(turnEnd!.index).toBeLessThan(dropped.index);
  } finally {
    a.proc.kill("SIGTERM");
    await a.proc.exited;
    await server.stop(true);
  }
}, 60_000);
