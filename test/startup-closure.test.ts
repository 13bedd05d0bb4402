/**
 * @module test/startup-closure.test
 * What `airlock run` evaluates before its first model request (docs/performance.md, issue 20): the
 * modules the binary's code-split bundle loads *statically* from the run path's chunks (src/cli/run.ts,
 * src/runtime.ts, src/run/run-once.ts, src/config/load.ts), i.e. without a dynamic `import()`, must not
 * include a provider SDK, the MCP or ACP SDK, hono, tinypool, pg-boss or QuickJS's host code: each of those is loaded on first
 * use; nor may it import `node:crypto` (loading it costs about as much CPU as a whole bare Bun start: Bun's
 * hasher and the global Web Crypto serve instead). The bundle is built the way build/build.ts builds the binary (`--splitting --format=esm`, target
 * bun), unminified so each chunk names the modules it holds.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { REPO } from "./harness-binary.ts";

/** Packages the run path must not load before its first model request (loaded on first use). */
const LAZY_PACKAGES = ["openai", "@anthropic-ai/sdk", "@modelcontextprotocol/sdk", "@agentclientprotocol/sdk", "hono", "tinypool", "pg-boss", "pg", "quickjs-emscripten-core"];
/** The run path's own modules: what `airlock run` imports before its first request. */
const RUN_PATH = ["src/cli/run.ts", "src/runtime.ts", "src/run/run-once.ts", "src/config/load.ts"];

let out: string;
/** Chunk file name → its text. */
const chunks = new Map<string, string>();

beforeAll(async () => {
  out = mkdtempSync(join(tmpdir(), "airlock-closure-"));
  const r = await Bun.build({ entrypoints: [join(REPO, "src", "boot.ts")], root: REPO, outdir: out, format: "esm", splitting: true, minify: false, target: "bun", throw: false });
  if (!r.success) throw new Error(`bundle failed: ${r.logs.map(String).join("\n")}`);
  for (const f of readdirSync(out)) if (f.endsWith(".js")) chunks.set(f, readFileSync(join(out, f), "utf8"));
}, 120_000);

afterAll(() => rmSync(out, { recursive: true, force: true }));

/** The modules a chunk holds, from the bundler's `// path` comments. */
function modulesOf(text: string): string[] {
  return [...text.matchAll(/^\/\/ (\S+\.(?:[cm]?js|ts|json|txt))$/gm)].map((m) => m[1]!);
}

/** The chunks `from` imports statically (`import … from "./chunk"`, `import "./chunk"`), transitively, itself included. */
function staticClosure(from: string): Set<string> {
  const seen = new Set<string>();
  const todo = [from];
  for (let f = todo.pop(); f !== undefined; f = todo.pop()) {
    if (seen.has(f)) continue;
    seen.add(f);
    const text = chunks.get(f) ?? "";
    for (const m of text.matchAll(/(?:\bfrom\s*|^import\s*)"\.\/([^"]+\.js)"/gm)) if (chunks.has(m[1]!)) todo.push(m[1]!);
  }
  return seen;
}

/** The chunk that holds the module at `path` (repository-relative). */
function chunkOf(path: string): string {
  const hit = [...chunks].find(([, text]) => modulesOf(text).includes(path));
  if (!hit) throw new Error(`no chunk holds ${path}`);
  return hit[0];
}

/** The package a bundled module path belongs to (`node_modules/@scope/name/…` → `@scope/name`), or null for the project's own. */
/**
 * Modules of a package that hold one constant and no code, allowed on the start path: the OpenAI SDK's version, which
 * the User-Agent of the early request and of the adapter needs before the SDK is loaded (agent/providers/openai-defaults.ts).
 */
const CONSTANT_MODULES = [/node_modules\/openai\/version\.m?js$/];

function packageOf(path: string): string | null {
  if (CONSTANT_MODULES.some((re) => re.test(path))) return null;
  const at = path.lastIndexOf("node_modules/");
  if (at < 0) return null;
  const parts = path.slice(at + "node_modules/".length).split("/");
  return parts[0]!.startsWith("@") ? `${parts[0]}/${parts[1]}` : parts[0]!;
}

describe("airlock run before its first model request", () => {
  test("loads no provider SDK, MCP or ACP SDK, hono, tinypool, pg-boss or quickjs-emscripten-core (each is loaded on first use)", () => {
    const loaded = new Set<string>();
    for (const path of RUN_PATH) for (const c of staticClosure(chunkOf(path))) for (const m of modulesOf(chunks.get(c)!)) loaded.add(m);
    const packages = new Set([...loaded].map(packageOf).filter((p): p is string => p !== null));
    // the check can see packages at all: the config loader's own are there
    expect(packages.has("zod")).toBe(true);
    expect(packages.has("yaml")).toBe(true);
    expect(LAZY_PACKAGES.filter((p) => packages.has(p))).toEqual([]);
  });

  test("the provider adapters themselves stay out of it (their default names live in *-defaults.ts)", () => {
    const loaded = new Set<string>();
    for (const path of RUN_PATH) for (const c of staticClosure(chunkOf(path))) for (const m of modulesOf(chunks.get(c)!)) loaded.add(m);
    expect([...loaded].filter((m) => /^src\/agent\/providers\/(openai|openai-responses|anthropic)\.ts$/.test(m))).toEqual([]);
    expect(loaded.has("src/agent/providers/openai-defaults.ts")).toBe(true);
    expect(loaded.has("src/agent/providers/anthropic-defaults.ts")).toBe(true);
  });

  test("imports no node:crypto (Bun.CryptoHasher and the global crypto instead)", () => {
    const importers: string[] = [];
    for (const path of RUN_PATH) {
      for (const c of staticClosure(chunkOf(path))) {
        const text = chunks.get(c)!;
        for (const m of text.matchAll(/\bfrom\s*"(?:node:)?crypto"/g)) {
          // the module the import belongs to: the nearest `// path` comment above it
          const above = [...text.slice(0, m.index).matchAll(/^\/\/ (\S+)$/gm)].pop();
          importers.push(above?.[1] ?? c);
        }
      }
    }
    expect([...new Set(importers)]).toEqual([]);
    // the check can see an import: the PostgreSQL fleet's node (loaded only in fleet mode) still has one
    expect(/\bfrom\s*"(?:node:)?crypto"/.test(chunks.get(chunkOf("src/fleet/node.ts"))!)).toBe(true);
  });

  test("the global MessageChannel is node:worker_threads' own, so script/pool.ts need not import that module", async () => {
    const w = await import("node:worker_threads");
    expect(w.MessageChannel).toBe(globalThis.MessageChannel as unknown as typeof w.MessageChannel);
    const { port1, port2 } = new MessageChannel() as unknown as { port1: import("node:worker_threads").MessagePort; port2: import("node:worker_threads").MessagePort };
    const got = new Promise((r) => port1.on("message", r));
    port2.postMessage({ ok: 1 });
    expect(await got).toEqual({ ok: 1 });
    port1.close();
  });

  test("imports no node:worker_threads", () => {
    const found = RUN_PATH.flatMap((path) => [...staticClosure(chunkOf(path))]).filter((c) => /\bfrom\s*"(?:node:)?worker_threads"/.test(chunks.get(c)!));
    expect(found.flatMap((c) => modulesOf(chunks.get(c)!).filter((m) => m.startsWith("src/")))).toEqual([]);
  });
});

describe("airlock run's early request (src/cli/early-request.ts)", () => {
  test("loads no zod, no provider SDK, no store and no runtime before it sends: only its own small modules", () => {
    const loaded = new Set<string>();
    for (const path of ["src/cli/run-argv.ts", "src/cli/run.ts", "src/cli/early-request.ts"]) {
      for (const c of staticClosure(chunkOf(path))) for (const m of modulesOf(chunks.get(c)!)) loaded.add(m);
    }
    const packages = new Set([...loaded].map(packageOf).filter((p): p is string => p !== null));
    expect([...packages]).toEqual([]);
    expect([...loaded].filter((m) => /^src\/(store|config\/(schema|load)\.ts|runtime\.ts|bus|session\/(?!types)|gate|hook|tool\/(registry|host-tools|tool)\.ts)/.test(m))).toEqual([]);
    // the check sees the early path's own modules: the body builder and the adoption slot
    expect(loaded.has("src/agent/providers/openai-request.ts")).toBe(true);
    expect(loaded.has("src/agent/providers/early.ts")).toBe(true);
    expect(/\bfrom\s*"bun:sqlite"/.test([...loaded].join("\n"))).toBe(false);
  });
});
