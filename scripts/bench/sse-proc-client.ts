/**
 * @module scripts/bench/sse-proc-client
 * An SSE client in its own process, as a user's console or `airlock attach` is: `floors.ts` runs it for the
 * `park-proc` and `park-idle-proc` steps. It opens one TCP socket (`Bun.connect`), sends `GET <path>` with the
 * bearer token, reads the HTTP/1.1 response off the socket itself (chunked or not), and for each SSE frame
 * takes the time (CLOCK_MONOTONIC, {@link monoMs}) at the socket read that completed it — before parsing.
 * Writes to stdout one line per frame the bench waits for: `ready` at the `snapshot`, then
 * `<event> <t_ms> <request_id or ->` for `action_required` and `delta` (other events are ignored).
 * Usage: `bun sse-proc-client.ts <http://host:port/path>` with `AIRLOCK_BENCH_TOKEN` in the environment.
 * Exits 2 on a non-200 status or a malformed response, 0 when the server closes the stream.
 */
import { createParser } from "eventsource-parser";
import { monoMs } from "./mono-clock.ts";

const url = new URL(process.argv[2] ?? "");
const token = process.env.AIRLOCK_BENCH_TOKEN ?? "";
const fail = (why: string): never => {
  process.stderr.write(`sse-proc-client: ${why}\n`);
  process.exit(2);
};

let now = 0; // the time of the socket read being parsed
const out: string[] = [];
const parser = createParser({
  onEvent(m) {
    if (m.event === "snapshot") out.push("ready\n");
    else if (m.event === "action_required") out.push(`action_required ${now} ${(JSON.parse(m.data) as { request_id: string }).request_id}\n`);
    else if (m.event === "delta") out.push(`delta ${now} -\n`);
  },
});
const text = new TextDecoder();

let head: Buffer | undefined = Buffer.alloc(0); // until the headers are read
let chunked = false;
let body = Buffer.alloc(0); // undecoded chunked body
let need = -1; // bytes of the current chunk left (-1: a size line is next)

/** Feeds the chunked body's data to the SSE parser as far as it is complete. */
function dechunk(): void {
  for (;;) {
    if (need < 0) {
      const eol = body.indexOf("\r\n");
      if (eol < 0) return;
      const size = Number.parseInt(body.subarray(0, eol).toString("latin1").split(";")[0]!, 16);
      if (!Number.isFinite(size)) fail("a malformed chunk size");
      if (size === 0) process.exit(0);
      body = body.subarray(eol + 2);
      need = size;
    }
    if (body.length < need + 2) return;
    parser.feed(text.decode(body.subarray(0, need), { stream: true }));
    body = body.subarray(need + 2);
    need = -1;
  }
}

await Bun.connect({
  hostname: url.hostname,
  port: Number(url.port),
  socket: {
    open(s) {
      s.setNoDelay(true);
      s.write(`GET ${url.pathname}${url.search} HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${token}\r\nAccept: text/event-stream\r\n\r\n`);
    },
    data(_s, chunk) {
      now = monoMs();
      if (head) {
        head = Buffer.concat([head, chunk]);
        const end = head.indexOf("\r\n\r\n");
        if (end < 0) return;
        const lines = head.subarray(0, end).toString("latin1").split("\r\n");
        if (!/^HTTP\/1\.1 200 /.test(lines[0]!)) fail(`status line ${lines[0]}`);
        chunked = lines.some((l) => /^transfer-encoding:\s*chunked/i.test(l));
        const rest = head.subarray(end + 4);
        head = undefined;
        chunk = rest;
      }
      if (chunked) {
        body = body.length ? Buffer.concat([body, chunk]) : Buffer.from(chunk);
        dechunk();
      } else parser.feed(text.decode(chunk, { stream: true }));
      if (out.length) {
        process.stdout.write(out.join(""));
        out.length = 0;
      }
    },
    close() {
      process.exit(0);
    },
    error(_s, e) {
      fail(String(e));
    },
  },
});
