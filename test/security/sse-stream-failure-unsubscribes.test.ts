/**
 * An SSE stream whose opening snapshot cannot be built (here: a damaged message row in the database,
 * whose `tool_calls` is not JSON) ends without leaving its bus listener behind. A listener left
 * subscribed keeps every later event of that session queued for a stream nobody reads, for the life of
 * the server, once per failed request: a client that repeats the request grows the server without bound.
 */
import { afterEach, expect, test } from "bun:test";
import { startHarness, type Harness } from "../harness.ts";

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

test("GET /sessions/:id/events whose snapshot fails leaves no bus listener subscribed", async () => {
  h = await startHarness();
  const s = await h.createSession();
  // a damaged row: listMessages (the snapshot's messages) throws while parsing it
  await h.rt.store.sql.run(
    "INSERT INTO messages (id, session_id, turn_id, role, content, tool_calls, tool_call_id, name, is_error, created_at) VALUES (?, ?, NULL, 'assistant', '', ?, NULL, NULL, NULL, ?)",
    ["msg_damaged", s.id, "{not json", new Date().toISOString()],
  );
  expect(h.rt.bus.listenerCount(s.id)).toBe(0);

  for (let i = 0; i < 3; i++) {
    const res = await h.api(`/sessions/${s.id}/events`);
    // the stream opens (200) and ends at once: read it to its end
    await res.text();
  }
  // the stream's end runs after the body closed: wait for the server side to settle on an event, not a clock
  await h.api("/sessions"); // one more round trip through the server
  expect(h.rt.bus.listenerCount(s.id)).toBe(0);
});
