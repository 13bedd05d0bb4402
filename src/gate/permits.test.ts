import { describe, expect, test } from "bun:test";
import { Permits } from "./permits.ts";

describe("Permits", () => {
  test("hands out at most max permits and serves waiters in order", async () => {
    const p = new Permits(2);
    const r1 = await p.acquire();
    const r2 = await p.acquire();
    expect(p.inUse).toBe(2);
    const order: number[] = [];
    const w3 = p.acquire().then((r) => (order.push(3), r));
    const w4 = p.acquire().then((r) => (order.push(4), r));
    expect(p.waiting).toBe(2);
    r1();
    r1(); // idempotent: does not free a second slot
    const r3 = await w3;
    expect(p.waiting).toBe(1);
    r2();
    const r4 = await w4;
    expect(order).toEqual([3, 4]);
    expect(p.inUse).toBe(2);
    r3();
    r4();
    expect(p.inUse).toBe(0);
  });

  test("an aborted waiter leaves the queue and holds nothing", async () => {
    const p = new Permits(1);
    const r1 = await p.acquire();
    const ac = new AbortController();
    const w = p.acquire(ac.signal);
    ac.abort();
    await expect(w).rejects.toMatchObject({ code: "cancelled" });
    expect(p.waiting).toBe(0);
    r1();
    expect(p.inUse).toBe(0);
    const again = await p.acquire();
    expect(p.inUse).toBe(1);
    again();
  });

  test("rejects a pool size below 1", () => {
    expect(() => new Permits(0)).toThrow();
  });
});
