/**
 * The typed client (client/, docs/api.md "OpenAPI and the client"): start a session, follow it, answer its card.
 * Run beside `airlock serve`:  AIRLOCK_DATA_DIR=~/.local/share/airlock bun examples/client.ts "write hello.txt"
 * (AIRLOCK_URL defaults to http://127.0.0.1:7420; the tokens are read from the data dir).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { createClient } from "../client/index.ts";

const dataDir = process.env.AIRLOCK_DATA_DIR ?? join(process.env.HOME ?? "", ".local/share/airlock");
const token = (name: string) => readFileSync(join(dataDir, name), "utf8").trim();
const airlock = createClient({ url: process.env.AIRLOCK_URL ?? "http://127.0.0.1:7420", token: token("api-token"), approverToken: token("approver-token") });

const session = await airlock.sessions.create({ workspace: process.cwd(), mode: "approve" });
const events = airlock.events(session.id);
await events.next(); // the snapshot: following before the turn starts, so no event is missed
const { turn_id } = await airlock.sessions.start(session.id, process.argv[2] ?? "write hello.txt");
console.log(`session ${session.id}, turn ${turn_id}`);

for await (const ev of events) {
  if (ev.type === "action_required") {
    console.log(`card: ${ev.data.tool} ${JSON.stringify(ev.data.arguments)} (${ev.data.reason})`);
    const answer = await airlock.cards.answer(ev.data.request_id, "allow_once");
    console.log(`answered: ${answer.decision}`);
  } else if (ev.type === "tool_result") {
    console.log(`${ev.data.tool}: ${ev.data.ok ? "ok" : ev.data.error?.code}`);
  } else if (ev.type === "turn_finished" && ev.data.turn_id === turn_id) {
    console.log(`turn ${ev.data.status}: ${ev.data.answer ?? ev.data.error?.message}`);
    break; // leaving the loop closes the stream
  }
}
