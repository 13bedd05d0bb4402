/**
 * Stream resume across a server restart (issue 13 item 1), over real HTTP with the real `airlock serve`
 * restarted on the same data dir: a client that saw ids up to N from the first process reconnects with
 * `Last-Event-ID` after the second process published a card to the root (at a low id of its own numbering)
 * and went past N. It must get a fresh `snapshot` holding the pending card, never a replay that skips it.
 */
import { expect, test } from "bun:test";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { openSse } from "../harness.ts";
import { serveFixture, type ServeProcess } from "../harness-serve.ts";

const fixture = serveFixture("airlock-resume-");
const { dir } = fixture;
const serve = (): Promise<ServeProcess> => fixture.serve(["--config", join(dir, "airlock.yaml")]);

test("Last-Event-ID from before a restart gets a fresh snapshot with the card parked after it, not a replay of the new numbering", async () => {
  mkdirSync(join(dir, "ws"));
  writeFileSync(join(dir, "airlock.yaml"), "mode: smart\nprovider: { name: scripted, script: turns.yaml }\n");
  writeFileSync(
    join(dir, "turns.yaml"),
    [
      "turns:",
      '  - text: "one"',
      '  - text: "two"',
      '  - text: "three"',
      '  - text: "four"',
      "subagents:",
      '  - turns: [{ tool_calls: [{ name: developer__write_file, arguments: { path: "out.txt", content: "w" } }] }]',
      "",
    ].join("\n"),
  );
  const first = await serve();
  const h = { authorization: `Bearer ${readFileSync(join(dir, "api-token"), "utf8").trim()}`, "content-type": "application/json" };
  const root = (await (await fetch(`${first.url}/sessions`, { method: "POST", headers: h, body: JSON.stringify({ workspace: join(dir, "ws") }) })).json()) as { id: string };
  const r1 = await openSse(`${first.url}/sessions/${root.id}/reply`, { method: "POST", headers: h, body: JSON.stringify({ message: "1" }) });
  await r1.ended;
  const lastSeen = r1.events.at(-1)!.id!;
  first.proc.kill("SIGTERM");
  expect(await first.proc.exited).toBe(0);

  const second = await serve();
  // a child's card reaches the root first (a low id in the new process), then the root goes on past the old last id
  const child = (await (await fetch(`${second.url}/sessions`, { method: "POST", headers: h, body: JSON.stringify({ parent_session_id: root.id }) })).json()) as { id: string };
  const rootObs = await openSse(`${second.url}/sessions/${root.id}/events`, { headers: h });
  const childReply = await openSse(`${second.url}/sessions/${child.id}/reply`, { method: "POST", headers: h, body: JSON.stringify({ message: "write" }) });
  const card = await rootObs.waitFor((e) => e.event === "action_required", 60_000);
  for (const m of ["2", "3"]) {
    const r = await openSse(`${second.url}/sessions/${root.id}/reply`, { method: "POST", headers: h, body: JSON.stringify({ message: m }) });
    await r.ended;
  }
  rootObs.close();

  const resumed = await openSse(`${second.url}/sessions/${root.id}/events`, { headers: { ...h, "last-event-id": lastSeen } });
  const firstEvent = await resumed.waitFor(() => true, 60_000);
  expect(firstEvent.event).toBe("snapshot");
  expect(firstEvent.data.pending_actions.map((c: any) => c.request_id)).toEqual([card.data.request_id]);
  resumed.close();

  // an id that cannot be parsed, and an old-style bare number, get a snapshot too
  for (const bad of ["garbage", "5"]) {
    const s = await openSse(`${second.url}/sessions/${root.id}/events`, { headers: { ...h, "last-event-id": bad } });
    const ev = await s.waitFor(() => true, 60_000);
    expect({ event: ev.event, cards: ev.data.pending_actions.length }).toEqual({ event: "snapshot", cards: 1 });
    s.close();
  }
  childReply.close();
  second.proc.kill("SIGTERM");
  expect(await second.proc.exited).toBe(0);
}, 120_000);
