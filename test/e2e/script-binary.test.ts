/**
 * @module test/e2e/script-binary.test
 * The script sandbox through the compiled binary copied alone into an empty folder
 * (`airlock __script-exec`): isolation, escape attempts, denial of service with the right codes and
 * a healthy next script, concurrent calls, and a parked call that does not block a 1-worker pool.
 */
import { describe, expect, test } from "bun:test";
import { ALLOWED_GLOBALS, DOS_CASES, ESCAPE_SCRIPT, HOST_NAMES, ISOLATION_IMPORTS, ISOLATION_SCRIPT, NATIVE_STALL_SCRIPT, POLLUTION_SCRIPT } from "../../src/script/test-scripts.ts";
import { compiledBinary, runBinary } from "../harness-binary.ts";

/** CPU deadline of the cases that are about it, ms. */
const SHORT_CPU_MS = 500;
/** CPU deadline of every other script, ms: generous, so a loaded machine never turns a limit into script_timeout. */
const CPU_MS = 30_000;

async function many(scripts: string[], flags: string[] = [], cpuMs = CPU_MS): Promise<{ code: number; results: any[]; stderr: string }> {
  const bin = await compiledBinary();
  const r = await runBinary(bin, ["__script-exec", "--many", "--cpu-ms", String(cpuMs), "--wall-ms", "60000", "--max-calls", "1000", ...flags], JSON.stringify(scripts));
  return { code: r.code, results: r.stdout.trim().split("\n").filter(Boolean).map((l) => JSON.parse(l)), stderr: r.stderr };
}

describe("compiled binary sandbox", () => {
  test("isolation, escape attempts and prototype pollution", async () => {
    const { results, stderr } = await many([ISOLATION_SCRIPT, ESCAPE_SCRIPT, POLLUTION_SCRIPT], ["--sequential"]);
    expect(stderr).toBe("");
    const [iso, esc, pol] = results;
    expect(iso.ok).toBe(true);
    expect(iso.value.names.filter((n: string) => !ALLOWED_GLOBALS.includes(n))).toEqual([]);
    expect(iso.value.types).toEqual(Object.fromEntries(HOST_NAMES.map((n) => [n, "undefined"])));
    expect(iso.value.imports).toEqual(ISOLATION_IMPORTS);
    expect(esc).toEqual({
      ok: true,
      value: {
        errorIsGuestError: true,
        errorWalk: true,
        errorFnSeesNoHost: true,
        errorFieldsAreStrings: true,
        errorFields: ["code", "message", "name", "stack"],
        errorCode: "tool_failed",
        resultWalk: true,
        resultProto: true,
        fnGlobal: true,
        badGlobals: [],
      },
      logs: [],
      calls: 2,
    });
    expect(pol).toEqual({ ok: true, value: { a: 1, list: [1, 2] }, logs: [], calls: 1 });
  }, 60_000);

  const cases = [...DOS_CASES, { name: "a long native call the interrupt handler misses", code: NATIVE_STALL_SCRIPT, expect: "script_timeout" }];
  for (const c of cases) {
    test(`${c.name}: ${c.expect}, then the next script runs`, async () => {
      // Only a timeout case gets a short CPU deadline: the others must end by their own limit, however loaded the machine.
      const { results } = await many([c.code, "return 'next'"], ["--sequential"], c.expect === "script_timeout" ? SHORT_CPU_MS : CPU_MS);
      expect(results.map((r) => (r.ok ? r.value : r.error.code))).toEqual([c.expect, "next"]);
    }, 60_000);
  }

  test("three concurrent tools.* calls via Promise.all all get their results", async () => {
    // Each branch holds until all three have released: only possible if the three calls are in flight together.
    const code = "const b = async (i) => { await tools.release(); await tools.hold({ until: 3 }); return i; }; return await Promise.all([b(1), b(2), b(3)]);";
    const { results } = await many([code]);
    expect(results).toEqual([{ ok: true, value: [1, 2, 3], logs: [], calls: 6 }]);
  }, 60_000);

  test("a parked call does not stop 4 other scripts on a pool of 1 worker", async () => {
    const other = "await tools.echo({}); return await tools.release();";
    const { results, code } = await many(["return await tools.hold({ until: 4 });", other, other, other, other], ["--workers", "1"]);
    expect(code).toBe(0);
    expect(results[0]).toEqual({ ok: true, value: { released: 4 }, logs: [], calls: 1 });
    expect(results.slice(1).map((r) => r.value).sort()).toEqual([1, 2, 3, 4]);
  }, 60_000);

  // Attacks on the batched bridge (test/security/script-bridge-attacks.test.ts): a guest that fills its memory so the
  // host cannot copy its calls or its return value out ended `script_error` with its calls dropped, `internal`, or (its
  // return value) threw in the pool, unhandled, and hung the script until the watchdog. Through the binary, each ends
  // ok or `script_memory_limit`, nothing on stderr, and the next script runs.
  test("a guest whose memory is full when the host copies its calls or its return value out: ok or script_memory_limit", async () => {
    const fill = (n: number): string => `const keep = globalThis.keep = []; try { for (;;) keep.push("z".repeat(1 << 16) + keep.length); } catch (e) {} for (let i = 0; i < ${n}; i++) keep.pop();`;
    const scripts: string[] = [];
    for (const n of [8, 24, 40, 56, 72]) {
      scripts.push(`const p = tools.echo("A".repeat(2 << 20)); ${fill(n)} const q = tools.echo(1); await Promise.all([p, q]); return "both";`);
      scripts.push(`const ps = [tools.echo("A".repeat(2 << 20))]; for (let i = 0; i < 30; i++) ps.push(tools.echo(i)); ${fill(n)} try { ps.push(tools.echo(1)); } catch (e) {} keep.length = 0; await Promise.all(ps); return "all";`);
      scripts.push(`const s = "\\u00e9".repeat(3 << 19); ${fill(n)} return s;`);
    }
    scripts.push("return 'next'");
    const { results, stderr, code } = await many(scripts, ["--sequential", "--memory-mb", "16", "--max-result-bytes", String(16 << 20)]);
    expect(stderr).toBe("");
    expect(code).toBeLessThan(2); // 1: some script failed (script_memory_limit); 2 or a crash: the pool failed
    expect(results.length).toBe(scripts.length);
    const ends = results.map((r) => (r.ok ? (typeof r.value === "string" && r.value.length === 3 << 19 ? "ok" : r.value === "both" || r.value === "all" || r.value === "next" ? "ok" : JSON.stringify(r.value).slice(0, 20)) : r.error.code));
    expect(ends.filter((e) => e !== "ok" && e !== "script_memory_limit")).toEqual([]);
    expect(results.at(-1)).toMatchObject({ ok: true, value: "next" });
  }, 120_000);

  test("tool calls run in the caller's AsyncLocalStorage context", async () => {
    const { results } = await many(["return await tools.whoami();"]);
    expect(results[0].value).toEqual({ sessionId: "ses_sandbox_exec", turnId: "turn_sandbox_exec", callId: "call_sandbox_exec" });
  }, 60_000);
});
