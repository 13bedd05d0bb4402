import { afterEach, describe, expect, test } from "bun:test";
import { Bus } from "../bus/bus.ts";
import { Inflight } from "../session/inflight.ts";
import { Store } from "../store/store.ts";
import { Cards } from "./pending.ts";

let open: { cards: Cards; store: Store }[] = [];
afterEach(async () => {
  for (const { cards, store } of open) {
    cards.close();
    await store.close();
  }
  open = [];
});

/** A `Cards` over an in-memory store with one running turn; `park(n)` parks n cards and returns their ids in park order. */
async function setup(decidedMemory: number) {
  const store = await Store.open(":memory:");
  const bus = new Bus();
  const inflight = new Inflight();
  const cards = new Cards({ store, bus, inflight, approverToken: "t", decidedMemory });
  open.push({ cards, store });
  const s = await store.createSession({ workspace: "/tmp", mode: "smart", sandbox: "workspace-write", privacy: "public", headless: false, provider: "scripted" });
  inflight.register(s.id, "turn_x");
  const ids: string[] = [];
  bus.subscribe(s.id, (ev) => {
    if (ev.type === "action_required") ids.push(String(ev.data.request_id));
  });
  const park = async (n: number): Promise<string[]> => {
    const want = ids.length + n;
    for (let i = 0; i < n; i++) {
      void cards.park({ homeSessionId: s.id, turnId: "turn_x", callId: `call_${ids.length}_${i}`, tool: "developer__shell", arguments: { command: "true" }, inspector: "mode", reason: "r", requiresUserProof: false, ttlSeconds: 3600 });
    }
    while (ids.length < want) await Bun.sleep(1);
    return ids.slice(want - n);
  };
  /** The error code of a second answer to `id` (a remembered card: `already_decided`; a forgotten one: `not_found`). */
  const again = async (id: string): Promise<string> => {
    const r = await cards.resolve(id, "deny", { sessionId: s.id });
    if (r.ok) throw new Error(`card ${id} was answered twice`);
    return r.error.code;
  };
  return { cards, session: s.id, park, again };
}

describe("decided cards remembered (decidedMemory)", () => {
  test("the newest decidedMemory decisions are remembered and the oldest forgotten first, over many rounds", async () => {
    const { cards, session, park, again } = await setup(3);
    const decided: string[] = [];
    // 4 rounds of 5: the ring of remembered ids wraps several times
    for (let round = 0; round < 4; round++) {
      for (const id of await park(5)) {
        const r = await cards.resolve(id, "allow_once", { sessionId: session });
        expect(r.ok).toBe(true);
        decided.push(id);
      }
    }
    const codes = [];
    for (const id of decided) codes.push(await again(id));
    expect(codes).toEqual([...Array(17).fill("not_found"), "already_decided", "already_decided", "already_decided"]);
  });

  test("a card ended otherwise (withdrawn) takes a slot like a decided one", async () => {
    const { cards, session, park, again } = await setup(2);
    const [a, b, c] = await park(3);
    expect((await cards.resolve(a!, "deny", { sessionId: session })).ok).toBe(true);
    cards.withdrawTurn({ sessionId: session, turnId: "turn_x" }); // b, c: cancelled, remembered after a
    expect([await again(a!), await again(b!), await again(c!)]).toEqual(["not_found", "already_decided", "already_decided"]);
  });

  test("decidedMemory 0 remembers none", async () => {
    const { cards, session, park, again } = await setup(0);
    const [a, b] = await park(2);
    for (const id of [a!, b!]) expect((await cards.resolve(id, "deny", { sessionId: session })).ok).toBe(true);
    expect([await again(a!), await again(b!)]).toEqual(["not_found", "not_found"]);
  });
});
