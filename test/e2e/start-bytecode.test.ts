/**
 * @module test/e2e/start-bytecode.test
 * The compiled binary carries JavaScriptCore bytecode for its start path only (build/bytecode.ts): the
 * graph embedded in `dist/airlock` has bytecode for a few chunks, the entry's among them, and the shared
 * parts it needs; JavaScriptCore takes it (its own `BUN_JSC_verboseDiskCache` report says "Cache hit") for
 * `--version` and for `airlock run` up to and past its early request; and a binary whose bytecode does not
 * match its chunks (two chunks' bytecode swapped in place) still gives the same answers, JavaScriptCore
 * compiling the source instead. The rewrite itself refuses what it does not know.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { GraphFormatError, keepBytecode, readGraph } from "../../build/bytecode.ts";
import { startFakeOpenAI, textChunks } from "../fixtures/fake-openai.ts";
import { compiledBinary } from "../harness-binary.ts";

const TRAILER = "\n---- Bun! ----\n";
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** Runs `bin args…` in `cwd` with JavaScriptCore's cache report on; returns exit code, stdout and the cache hits and misses it reported. */
async function run(bin: string, args: string[], cwd: string, env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string; hits: number; misses: number }> {
  const p = Bun.spawn([bin, ...args], { cwd, stdin: "ignore", stdout: "pipe", stderr: "pipe", env: { PATH: "/usr/bin:/bin", HOME: cwd, BUN_JSC_verboseDiskCache: "1", ...env } });
  const timer = setTimeout(() => p.kill("SIGKILL"), 60_000);
  const [code, stdout, stderr] = await Promise.all([p.exited, new Response(p.stdout).text(), new Response(p.stderr).text()]);
  clearTimeout(timer);
  const report = stdout + stderr;
  const count = (s: string) => report.split(s).length - 1;
  const strip = (t: string) => t.replace(/^\[Disk Cache\].*\n/gm, "");
  return { code, stdout: strip(stdout), stderr: strip(stderr), hits: count("[Disk Cache] Cache hit"), misses: count("[Disk Cache] Cache miss") };
}

/**
 * `bin` with the bytecode pointers of modules `a` and `b` swapped in place, read from the graph's own
 * trailer and offsets record (the layout build/bytecode.ts documents), written beside it as `name`.
 */
function swapBytecode(bin: string, a: string, b: string, name: string): string {
  const bytes = Buffer.from(readFileSync(bin));
  const offsetsAt = bytes.lastIndexOf(TRAILER) - 32;
  const graphAt = offsetsAt - Number(bytes.readBigUInt64LE(offsetsAt));
  const modulesAt = graphAt + bytes.readUInt32LE(offsetsAt + 8);
  const count = bytes.readUInt32LE(offsetsAt + 12) / 52;
  const recordOf = (want: string): number => {
    for (let i = 0; i < count; i++) {
      const r = modulesAt + i * 52;
      const nameAt = graphAt + bytes.readUInt32LE(r);
      if (bytes.toString("latin1", nameAt, nameAt + bytes.readUInt32LE(r + 4)) === want) return r;
    }
    throw new Error(`no module ${want}`);
  };
  const ra = recordOf(a);
  const rb = recordOf(b);
  const pa = Buffer.from(bytes.subarray(ra + 24, ra + 32));
  bytes.copy(bytes, ra + 24, rb + 24, rb + 32);
  pa.copy(bytes, rb + 24);
  const out = join(dirname(bin), name);
  writeFileSync(out, bytes);
  chmodSync(out, 0o755);
  return out;
}

describe("start-path bytecode", () => {
  test("the binary's graph has bytecode for a few chunks (the entry's among them) and the shared parts", async () => {
    const g = readGraph(new Uint8Array(readFileSync(await compiledBinary())));
    const js = g.modules.filter((m) => m.name.endsWith(".js") || m.name === "/$bunfs/root/airlock");
    const withBytecode = g.modules.filter((m) => m.bytecodeBytes > 0);
    expect(g.modules.find((m) => m.name === "/$bunfs/root/airlock")!.bytecodeBytes).toBeGreaterThan(0);
    // boot, the usage table's reader, run-argv, the early request and what they import: a handful of ~190 chunks
    expect(withBytecode.length).toBeGreaterThanOrEqual(5);
    expect(withBytecode.length).toBeLessThan(js.length / 4);
    expect(withBytecode.reduce((s, m) => s + m.bytecodeBytes, 0)).toBeLessThan(300_000);
    expect({ stringTable: g.stringTableBytes > 0, prelinked: g.prelinked }).toEqual({ stringTable: true, prelinked: true });
  });

  test("JavaScriptCore takes the bytecode for --version and for run up to and past its early request; swapped bytecode falls back to source; the system prompt sent is its file's text", async () => {
    const bin = await compiledBinary();
    const dir = mkdtempSync(join(tmpdir(), "airlock-bytecode-"));
    dirs.push(dir);
    const version = await run(bin, ["--version"], dir);
    expect({ code: version.code, stdout: version.stdout }).toEqual({ code: 0, stdout: `${JSON.parse(readFileSync(join(import.meta.dir, "..", "..", "package.json"), "utf8")).version}\n` });
    expect(version.hits).toBeGreaterThanOrEqual(2);

    const fake = startFakeOpenAI(() => textChunks("bytecode ok"));
    try {
      const data = join(dir, "data");
      const ws = join(dir, "ws");
      mkdirSync(data);
      mkdirSync(ws);
      writeFileSync(join(data, "airlock.yaml"), `provider:\n  name: openai\n  model: m\n  base_url: ${fake.url}\n  api_key_env: TEST_KEY\n`);
      const argv = ["run", "hi", "--headless", "--data-dir", data, "--workspace", ws];
      const first = await run(bin, argv, ws, { TEST_KEY: "k" });
      expect({ code: first.code, out: first.stdout.includes("bytecode ok") }).toEqual({ code: 0, out: true });
      // every start-path chunk it loads is a hit (boot, usage-error, run-argv, early-request and their imports)
      expect(first.hits).toBeGreaterThanOrEqual(8);
      const g = readGraph(new Uint8Array(readFileSync(bin)));
      const other = g.modules.find((m) => m.bytecodeBytes > 0 && m.name !== "/$bunfs/root/airlock")!.name;
      const swapped = swapBytecode(bin, "/$bunfs/root/airlock", other, "airlock-swapped");
      const v2 = await run(swapped, ["--version"], dir);
      expect({ code: v2.code, stdout: v2.stdout }).toEqual({ code: version.code, stdout: version.stdout });
      expect(v2.hits).toBeLessThan(version.hits);
      const bad = await run(swapped, ["run", "--mode", "nope", "x"], dir);
      const badRef = await run(bin, ["run", "--mode", "nope", "x"], dir);
      expect({ code: bad.code, stderr: bad.stderr }).toEqual({ code: badRef.code, stderr: badRef.stderr });
      const second = await run(swapped, argv, ws, { TEST_KEY: "k" });
      expect({ code: second.code, out: second.stdout.includes("bytecode ok") }).toEqual({ code: 0, out: true });
      expect(fake.requests.length).toBe(2);
      // the system prompt is bundled into its chunk as a string (build/build.ts inlineTextPlugin), byte for byte the file's text
      const systemText = readFileSync(join(import.meta.dir, "..", "..", "src", "agent", "system.txt"), "utf8");
      expect(fake.requests.map((r) => r.messages[0])).toEqual([
        { role: "system", content: systemText },
        { role: "system", content: systemText },
      ]);
      expect(g.modules.filter((m) => m.name.endsWith(".txt")).map((m) => m.name)).toEqual([]);
    } finally {
      await fake.close();
    }
  }, 120_000);

  test("the rewrite refuses a file that is not a Bun executable and a module that is not in the graph", async () => {
    expect(() => readGraph(new Uint8Array(64))).toThrow(GraphFormatError);
    const bin = new Uint8Array(readFileSync(await compiledBinary()));
    // the binary is already rewritten: its dropped chunks have no bytecode left to keep
    const without = readGraph(bin).modules.find((m) => m.bytecodeBytes === 0 && m.name.endsWith(".js"))!.name;
    expect(() => keepBytecode(bin, new Set([without]))).toThrow(/has no bytecode to keep/);
    expect(() => keepBytecode(bin, new Set(["/$bunfs/root/nope.js"]))).toThrow(/is not a module of the graph/);
  });
});
