import { describe, expect, test } from "bun:test";
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
