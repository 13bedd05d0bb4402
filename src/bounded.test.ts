/**
 * BoundedMap / BoundedSet (src/bounded.ts) against the code they replaced: a plain `Map` / `Set` that forgot
 * its oldest entry with `delete(keys().next().value)` once past its limit. Random operation sequences (new keys,
 * present keys, deletes, delete-then-set to move a key to the newest place) must leave the same entries in the
 * same order after every step, so eviction order and limits are unchanged for every caller.
 */
import { describe, expect, test } from "bun:test";
import { BoundedMap, BoundedSet } from "./bounded.ts";

/** The replaced pattern, kept here as the reference. */
class ReferenceMap<K, V> {
  readonly map = new Map<K, V>();
  constructor(private readonly limit: number) {}
  set(k: K, v: V): void {
    this.map.set(k, v);
    while (this.map.size > this.limit) this.map.delete(this.map.keys().next().value!);
  }
  delete(k: K): boolean {
    return this.map.delete(k);
  }
}

/** A small deterministic generator (mulberry32), so a failure reproduces. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe("BoundedMap", () => {
  test("evicts the oldest inserted first; setting a present key changes its value, not its place", () => {
    const m = new BoundedMap<string, number>(3);
    m.set("a", 1).set("b", 2).set("c", 3);
    m.set("a", 10); // present: stays oldest
    m.set("d", 4); // forgets a
    expect([...m]).toEqual([["b", 2], ["c", 3], ["d", 4]]);
    m.delete("c");
    m.set("e", 5).set("f", 6); // forgets b only (c already gone)
    expect([...m.keys()]).toEqual(["d", "e", "f"]);
    expect(m.oldest()).toBe("d");
    // delete then set: the key moves to the newest place (the feed's and the shrinker's "remember")
    m.delete("d");
    m.set("d", 7);
    m.set("g", 8);
    expect([...m.entries()]).toEqual([["f", 6], ["d", 7], ["g", 8]]);
    expect(m.size).toBe(3);
    expect(m.get("e")).toBeUndefined();
    expect(m.has("g")).toBe(true);
  });

  test("limit 0 keeps nothing; limit 1 keeps the newest; a bad limit is a RangeError", () => {
    const none = new BoundedMap<number, number>(0);
    none.set(1, 1);
    expect(none.size).toBe(0);
    expect(none.oldest()).toBeUndefined();
    const one = new BoundedMap<number, number>(1);
    for (let i = 0; i < 5; i++) one.set(i, i);
    expect([...one]).toEqual([[4, 4]]);
    for (const bad of [-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) expect(() => new BoundedMap(bad)).toThrow(RangeError);
  });

  for (const limit of [1, 2, 7, 64]) {
    test(`random operations leave the same entries, in the same order, as Map + keys().next() (limit ${limit})`, () => {
      const rand = rng(limit * 7919);
      const ref = new ReferenceMap<number, number>(limit);
      const got = new BoundedMap<number, number>(limit);
      const keys = limit * 3;
      for (let step = 0; step < 20_000; step++) {
        const k = Math.floor(rand() * keys);
        const r = rand();
        if (r < 0.45) {
          ref.set(k, step);
          got.set(k, step);
        } else if (r < 0.75) {
          expect(got.delete(k)).toBe(ref.delete(k));
        } else {
          // move to the newest place
          ref.delete(k);
          got.delete(k);
          ref.set(k, step);
          got.set(k, step);
        }
        expect(got.size).toBe(ref.map.size);
        if (step % 97 === 0 || got.size <= 3) expect([...got]).toEqual([...ref.map]);
        expect(got.oldest()).toBe(ref.map.size ? ref.map.keys().next().value : undefined);
      }
      expect([...got]).toEqual([...ref.map]);
    });
  }

  test("deletes without evictions do not make the order queue grow without bound", () => {
    const m = new BoundedMap<number, number>(500);
    for (let i = 0; i < 100_000; i++) {
      m.set(i, i);
      m.delete(i - 3);
    }
    expect(m.size).toBe(3);
    expect([...m.keys()]).toEqual([99_997, 99_998, 99_999]);
    // the queue is private; its length is what bounds memory
    expect((m as unknown as { queueKeys: unknown[] }).queueKeys.length).toBeLessThanOrEqual(2 * 3 + 33);
  });
});

describe("BoundedSet", () => {
  test("same order and limit as Set + values().next(); adding a present value keeps its place", () => {
    const rand = rng(42);
    const ref = new Set<number>();
    const got = new BoundedSet<number>(10);
    for (let step = 0; step < 5_000; step++) {
      const v = Math.floor(rand() * 30);
      if (rand() < 0.8) {
        ref.add(v);
        if (ref.size > 10) ref.delete(ref.values().next().value!);
        got.add(v);
      } else expect(got.delete(v)).toBe(ref.delete(v));
      expect([...got]).toEqual([...ref]);
    }
    expect(got.limit).toBe(10);
    expect(got.has([...ref][0]!)).toBe(true);
  });
});
