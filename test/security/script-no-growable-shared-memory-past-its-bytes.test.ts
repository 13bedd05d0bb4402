/**
 * @module test/security/script-no-growable-shared-memory-past-its-bytes
 * QuickJS (quickjs-emscripten 0.32) allocates a growable SharedArrayBuffer's initial bytes only, and its `grow` then
 * lengthens it in place: `new SharedArrayBuffer(8, { maxByteLength: 8 << 20 }).grow(8 << 20)` gives a script read and
 * write access to 8 MiB of its instance's memory past those 8 bytes — QuickJS's own heap (objects, the bridge's state)
 * and the memory past the heap's break, which a thread's next script gets as its heap grows (src/script/snapshot.ts
 * restores the heap up to the snapshot's break and zeroes what the script's break took, not what lies past it). So one
 * script wrote where the next read it back. Scripts have no use for shared memory (no threads, no Atomics): the guest
 * has no `SharedArrayBuffer`. Real pool, `workers: 1`.
 */
import { expect, test } from "bun:test";
import { ScriptPool, type RunOptions } from "../../src/script/pool.ts";
import type { ToolOutcome } from "../../src/tool/tool.ts";

const LIMITS: RunOptions = { cpuTimeoutMs: 30_000, wallTimeoutMs: 60_000, maxToolCalls: 10, maxLogBytes: 64 * 1024, maxResultBytes: 1 << 20 };
const tool = async (): Promise<ToolOutcome> => ({ ok: true, result: null });

/** A secret as char codes (no string of either script holds it). */
const SECRET = "[83, 51, 67, 82, 51, 84, 45, 119, 114, 105, 116, 116, 101, 110]";
const GROWN = "const s = new SharedArrayBuffer(8, { maxByteLength: 8 << 20 }); s.grow(8 << 20); const u = new Uint8Array(s);";
/** Writes the secret every 4 KiB from 1 MiB past its buffer's 8 bytes on (past the heap's break). */
const WRITE = `${GROWN} const m = ${SECRET}; for (let at = 1 << 20; at + 64 < u.length; at += 4096) for (let j = 0; j < m.length; j++) u[at + j] = m[j]; return 1;`;
/** Where it finds the secret in 8 MiB past its buffer's 8 bytes, or -1. */
const READ = `${GROWN} const m = ${SECRET};
  for (let i = 0; i + m.length < u.length; i++) { let j = 0; while (j < m.length && u[i + j] === m[j]) j++; if (j === m.length) return i; }
  return -1;`;

test("no script has a SharedArrayBuffer, so none reads or writes past its buffer's bytes into what the next script gets", async () => {
  await using pool = new ScriptPool({ workers: 1, maxScripts: 1, memoryMb: 32, stackKb: 256 });
  expect(await pool.run("return typeof SharedArrayBuffer", LIMITS, tool)).toMatchObject({ ok: true, value: "undefined" });
  await Bun.sleep(300); // the thread's snapshot is made once it is idle
  for (let i = 0; i < 3; i++) {
    const w = await pool.run(WRITE, LIMITS, tool);
    const r = await pool.run(READ, LIMITS, tool);
    // neither runs (no SharedArrayBuffer); were one to, the reader must not find the writer's bytes
    expect(r.ok ? r.value : -1).toBe(-1);
    expect(w).toMatchObject({ ok: false, error: { code: "script_error" } });
  }
}, 120_000);
