/**
 * @module test/integration/api-body-limit
 * A request body over `limits.max_body_bytes` gets the API's usual JSON error over real HTTP —
 * `{"error": "payload_too_large", "limit_bytes": N, "message": …}` with status 413 — however far
 * over the limit it is and whether it is sent with a Content-Length or chunked; the transport never
 * answers a bare 413 of its own.
 */
import { afterEach, expect, test } from "bun:test";
import { startHarness, type Harness } from "../harness.ts";

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const LIMIT = 1024;
const expected = { error: "payload_too_large", limit_bytes: LIMIT, message: `the request body is larger than limits.max_body_bytes (${LIMIT} bytes); send less` };

test("a body just over, far over (past 64 KiB more) or megabytes over the limit gets the JSON error with the limit in bytes", async () => {
  h = await startHarness({ config: { limits: { max_body_bytes: LIMIT } } });
  const s = await h.createSession();
  for (const size of [LIMIT + 1, LIMIT + 70_000, 4 * 1024 * 1024]) {
    const res = await h.api(`/sessions/${s.id}/reply`, { method: "POST", body: JSON.stringify({ message: "x".repeat(size) }), headers: { "content-type": "application/json" } });
    expect({ size, status: res.status, type: res.headers.get("content-type"), body: await res.json().catch(() => null) }).toEqual({ size, status: 413, type: "application/json", body: expected });
  }
});

test("a chunked body (no Content-Length) far over the limit gets the same JSON error", async () => {
  h = await startHarness({ config: { limits: { max_body_bytes: LIMIT } } });
  const s = await h.createSession();
  const chunk = new TextEncoder().encode("x".repeat(64 * 1024));
  let sent = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(c) {
      if (sent === 0) c.enqueue(new TextEncoder().encode('{"message":"'));
      if (sent >= 32) return c.close();
      sent++;
      c.enqueue(chunk);
    },
  });
  const res = await fetch(`${h.url}/sessions/${s.id}/reply`, { method: "POST", body, headers: { authorization: `Bearer ${h.token}`, "content-type": "application/json" } });
  expect({ status: res.status, body: await res.json().catch(() => null) }).toEqual({ status: 413, body: expected });
});
