/**
 * @module test/security/script-snapshot-heap-past-the-break-zeroed
 * A thread's guest snapshot (src/script/snapshot.ts) wrote back the static data and the heap up to the snapshot's
 * break, but left the heap a script took past that break as the script left it: the next script's allocations get that
 * memory back as it is, and QuickJS hands some memory out unwritten (a growable SharedArrayBuffer read a previous
 * script's strings so, before the guest lost it: test/security/script-no-growable-shared-memory-past-its-bytes). After a
 * restore the instance's memory must hold nothing of the script, whatever the script's heap grew to. Driven through
 * GuestSnapshot and ScriptRun as the worker drives them, on the real QuickJS build.
 */
import { expect, test } from "bun:test";
import { Instances } from "../../src/script/instances.ts";
import { GuestSnapshot } from "../../src/script/snapshot.ts";
import { prepareGuest, ScriptRun } from "../../src/script/vm.ts";

const MEMORY = 32 * 2 ** 20;
const STACK = 256 * 1024;
const LIMITS = { cpuTimeoutMs: 10_000, wallTimeoutMs: 30_000, maxToolCalls: 10, maxLogBytes: 1 << 16, maxResultBytes: 1 << 20 };
const SECRET = "S3CR3T-of-the-last-script";

/** Scripts that leave the secret in heap they took past the snapshot's break, each its own way. */
const PLANTS = [
  `const keep = []; for (let i = 0; i < 4000; i++) keep.push(JSON.stringify({ secret: '${SECRET}', i, pad: 'k'.repeat(1000) })); return keep.length`,
  `const b = new Uint8Array(6 << 20); const m = '${SECRET}'; for (let at = 0; at + 64 < b.length; at += 4096) for (let j = 0; j < m.length; j++) b[at + j] = m.charCodeAt(j); return 1`,
  `let s = '${SECRET}'; while (s.length < (4 << 20)) s += s; throw new Error(s.slice(0, 1 << 20))`,
];

async function run(snap: GuestSnapshot, code: string): Promise<void> {
  const inst = snap.inst;
  const r = new ScriptRun(inst.module, { code, limits: LIMITS, memoryBytes: MEMORY, stackBytes: STACK, meter: new Float64Array(8), memoryExhausted: (w) => inst.exhausted(w), memoryWallHit: () => inst.atWall(), releaseLater: true, post: () => {} });
  r.start(snap.lend());
  const outcome = await r.done;
  expect(outcome.fatal).toBe(false);
  expect(r.release()).toBe(true);
}

test("after each restore the instance's whole memory holds nothing of the script, however far its heap grew", async () => {
  const pool = await Instances.create(32);
  const inst = await pool.fresh();
  const snap = GuestSnapshot.take(inst, prepareGuest(inst.module, MEMORY, STACK, true), pool.layout);
  if (!snap) throw new Error("no snapshot on the pinned build");
  const breakAt = pool.layout!.breakAt;
  const brk = (): number => new DataView(inst.memory.buffer).getUint32(breakAt, true);
  const taken = brk();
  for (const code of PLANTS) {
    await run(snap, code);
    const mem = Buffer.from(inst.memory.buffer);
    expect(brk()).toBeGreaterThan(taken + (1 << 20)); // the script's heap did go past the snapshot's break
    expect(mem.indexOf(SECRET)).toBeGreaterThan(0); // and holds the secret until the restore
    expect(snap.restore()).toBe(true);
    expect(brk()).toBe(taken);
    expect(Buffer.from(inst.memory.buffer).indexOf(SECRET)).toBe(-1);
  }
});
