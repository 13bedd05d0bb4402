/**
 * Crash recovery over the real binary entry: `airlock serve` is killed with SIGKILL mid-turn; after a
 * restart on the same data dir the database opens, the session is readable over HTTP, and the
 * interrupted turn is marked `interrupted`.
 */
import { expect, test } from "bun:test";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { openSse } from "../harness.ts";
import { serveFixture } from "../harness-serve.ts";

const { dir, serve } = serveFixture("airlock-crash-");

test("after kill -9 mid-turn and a restart, the session is readable and its turn is interrupted", async () => {
  mkdirSync(join(dir, "ws"));
  writeFileSync(join(dir, "airlock.yaml"), "provider: { name: scripted, script: turns.yaml }\n");
  writeFileSync(join(dir, "turns.yaml"), "turns:\n  - text: thinking\n    delay_ms: 600000\n");
  const first = await serve();
  const token = readFileSync(join(dir, "api-token"), "utf8").trim();
  const auth = { authorization: `Bearer ${token}`, "content-type": "application/json" };
  const created = await fetch(`${first.url}/sessions`, { method: "POST", headers: auth, body: JSON.stringify({ workspace: join(dir, "ws") }) });
  expect(created.status).toBe(201);
  const session = (await created.json()) as { id: string };
  const reply = await openSse(`${first.url}/sessions/${session.id}/reply`, { method: "POST", headers: auth, body: JSON.stringify({ message: "think hard" }) });
  await reply.waitFor((e) => e.event === "delta");
  first.proc.kill("SIGKILL");
  expect(await first.proc.exited).not.toBe(0);
  await reply.ended;

  writeFileSync(join(dir, "turns.yaml"), "turns:\n  - text: back again\n");
  const second = await serve();
  const got = await fetch(`${second.url}/sessions/${session.id}`, { headers: auth });
  expect(got.status).toBe(200);
  const body = (await got.json()) as any;
  expect(body.id).toBe(session.id);
  expect(body.in_flight).toBe(false);
  expect(body.messages.map((m: any) => m.content)).toEqual(["think hard"]);
  expect(body.turns.length).toBe(1);
  expect(body.turns[0].status).toBe("interrupted");
  // the session takes a new turn after the restart (the scripted model's turns were changed meanwhile)
  const again = await openSse(`${second.url}/sessions/${session.id}/reply`, { method: "POST", headers: auth, body: JSON.stringify({ message: "again" }) });
  expect((await again.waitFor((e) => e.event === "turn_finished")).data).toMatchObject({ status: "completed", answer: "back again" });
  second.proc.kill("SIGTERM");
  expect(await second.proc.exited).toBe(0);
});
