import { describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { Expiry } from "./expiry.ts";

/** Resolves once `done()` holds (checked every 5 ms), failing after `ms`. */
async function until(done: () => boolean, ms = 10_000): Promise<void> {
  const end = performance.now() + ms;
  while (!done()) {
    if (performance.now() > end) throw new Error("condition not reached");
    await Bun.sleep(5);
  }
}

describe("card expiry (one timer for every card)", () => {
  test("fires each live id once, in due order; an ended id never fires", async () => {
    const fired: string[] = [];
    const live = new Set(["a", "b", "c", "d"]);
    const e = new Expiry(
      (id) => {
        fired.push(id);
        live.delete(id);
      },
      (id) => live.has(id),
    );
    e.add("c", 90);
    e.add("a", 10);
    e.add("d", 120);
    e.add("b", 50);
    live.delete("b"); // decided before its TTL
    e.forget();
    await until(() => fired.length === 3);
    await Bun.sleep(150); // past every due time: nothing more fires
    expect(fired).toEqual(["a", "c", "d"]);
    expect(e.size).toBe(0);
    e.close();
  });

  test("a card added with an earlier due time re-arms the timer", async () => {
    const fired: string[] = [];
    const e = new Expiry((id) => fired.push(id), () => true);
    e.add("late", 60_000);
    e.add("soon", 5);
    await until(() => fired.length === 1);
    expect(fired).toEqual(["soon"]);
    expect(e.size).toBe(1);
    e.close();
  });

  test("a due time beyond setTimeout's range does not fire at once", async () => {
    const fired: string[] = [];
    const e = new Expiry((id) => fired.push(id), () => true);
    e.add("far", 2 ** 33);
    e.add("near", 20);
    await until(() => fired.length === 1);
    await Bun.sleep(50);
    expect(fired).toEqual(["near"]);
    e.close();
  });

  test("the heap is rebuilt from the live entries once ended ones are the majority, and stays ordered", async () => {
    const live = new Set<string>();
    const fired: string[] = [];
    const e = new Expiry(
      (id) => {
        fired.push(id);
        live.delete(id);
      },
      (id) => live.has(id),
    );
    const due = new Map<string, number>(); // each id's due time, read just before its add
    const t0 = performance.now();
    for (let i = 0; i < 5000; i++) {
      const id = `act_${i}`;
      const ms = 300 + ((i * 7919) % 400); // shuffled delays, 300..699 ms
      live.add(id);
      due.set(id, performance.now() + ms);
      e.add(id, ms);
    }
    const slack = performance.now() - t0; // how far a due time read here can be from the one add() took
    // end 4,000 of them early: the heap drops to the 1,000 live ones
    for (let i = 0; i < 4000; i++) {
      live.delete(`act_${i}`);
      e.forget();
    }
    expect(e.size).toBeLessThan(2 * 1000 + 1024);
    await until(() => fired.length === 1000);
    expect(new Set(fired)).toEqual(new Set([...due.keys()].slice(4000)));
    // in due order (up to the time the adds took)
    for (let i = 1; i < fired.length; i++) expect(due.get(fired[i]!)!).toBeGreaterThanOrEqual(due.get(fired[i - 1]!)! - slack);
    e.close();
  });

  test("close() stops everything: nothing fires afterwards", async () => {
    const fired: string[] = [];
    const e = new Expiry((id) => fired.push(id), () => true);
    e.add("x", 10);
    e.close();
    await Bun.sleep(60);
    expect(fired).toEqual([]);
    expect(e.size).toBe(0);
  });
});

describe("cards and the expiry timer", () => {
  test("a process whose cards were all decided exits on its own (no timer left until a TTL of an hour)", async () => {
    const dir = mkdtempSync(`${tmpdir()}/airlock-expiry-`);
    const file = `${dir}/child.ts`;
    const src = (m: string) => JSON.stringify(new URL(m, import.meta.url).pathname);
    await Bun.write(
      file,
      `import { Cards } from ${src("./pending.ts")};
import { Bus } from ${src("../bus/bus.ts")};
import { Inflight } from ${src("../session/inflight.ts")};
import { Store } from ${src("../store/store.ts")};
const store = await Store.open(":memory:");
const bus = new Bus();
const inflight = new Inflight();
const cards = new Cards({ store, bus, inflight, approverToken: "t" });
const s = await store.createSession({ workspace: "/tmp", mode: "smart", sandbox: "workspace-write", privacy: "public", headless: false, provider: "scripted" });
inflight.register(s.id, "turn_x");
const ids: string[] = [];
bus.subscribe(s.id, (ev) => { if (ev.type === "action_required") ids.push(String(ev.data.request_id)); });
const parked = [1, 2, 3].map((i) => cards.park({ homeSessionId: s.id, turnId: "turn_x", callId: "call_" + i, tool: "developer__shell", arguments: { command: "true" }, inspector: "mode", reason: "r", requiresUserProof: false, ttlSeconds: 3600 }));
while (ids.length < 3) await Bun.sleep(1);
for (const id of ids) { const r = await cards.resolve(id, "deny", { sessionId: s.id }); if (!r.ok) throw new Error(r.error.code); }
console.log(JSON.stringify((await Promise.all(parked)).map((o) => o.decision)));
`,
    );
    const child = Bun.spawn([process.execPath, file], { stdout: "pipe", stderr: "pipe" });
    // generous bound for a loaded machine: the old per-card timers let it exit at once; a leaked timer holds it an hour
    const killer = setTimeout(() => child.kill(), 60_000);
    const [code, out, err] = await Promise.all([child.exited, new Response(child.stdout).text(), new Response(child.stderr).text()]).finally(() => {
      clearTimeout(killer);
      rmSync(dir, { recursive: true, force: true });
    });
    expect(err).toBe("");
    expect(out.trim()).toBe(JSON.stringify(["deny", "deny", "deny"]));
    expect(code).toBe(0);
  }, 90_000);
});
