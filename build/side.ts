/**
 * @module build/side
 * The side bundles and the compressed QuickJS WASM of the compiled binary (docs/performance.md, release
 * size). Each side bundle — the MCP SDK (src/side/mcp.ts), the ACP SDK, pg-boss (with `pg`) — is bundled
 * here to one minified ES module, zstd-compressed (level 19) and written to a build folder; the generated
 * replacement of src/side/modules.ts imports each compressed file `with { type: "file" }` (so the
 * compiler embeds it as a file, not as code or bytecode) and records its SHA-256 and length, which
 * src/side/load.ts checks before use. The QuickJS WASM is taken from the package's singlefile build (the
 * bytes it hands to `WebAssembly.instantiate`), compressed the same way, and the package's own copy (a
 * ~1.3 MB string literal) is replaced with an empty one by {@link stripQuickJSWasm} — the binary then
 * always compiles the embedded bytes. Deterministic: the same sources give the same bytes.
 */
import { createHash } from "node:crypto";
import { mkdirSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { BunPlugin } from "bun";

/** One side bundle: its name in src/side/modules.ts's `side` table and its entry (a file path). */
interface SideSpec {
  key: "mcp" | "acp" | "pgBoss";
  name: string;
  entry: string;
  /** Modules left unresolved (optional native add-ons the package only `require`s when present). */
  external?: string[];
}

/** What one embedded file came to, for the generated module and scripts/bench/embedded.ts. */
export interface SideFile {
  name: string;
  /** The compressed file written for embedding. */
  file: string;
  /** Bytes before and after compression. */
  bytes: number;
  compressed_bytes: number;
  sha256: string;
}

/** The generated src/side/modules.ts and the files it embeds. */
export interface SideBuild {
  module: string;
  files: SideFile[];
  /** The bundler plugin that strips the QuickJS package's own WASM copy (pass to the main build). */
  plugin: BunPlugin;
}

const LEVEL = 19;

function specs(root: string): SideSpec[] {
  return [
    { key: "mcp", name: "mcp", entry: join(root, "src", "side", "mcp.ts") },
    { key: "acp", name: "acp", entry: Bun.resolveSync("@agentclientprotocol/sdk", root) },
    { key: "pgBoss", name: "pg-boss", entry: Bun.resolveSync("pg-boss", root), external: ["pg-native"] },
  ];
}

/** The raw QuickJS WASM bytes: the singlefile build's own, caught as it hands them to `WebAssembly.instantiate`. */
async function quickjsWasmBytes(): Promise<Uint8Array> {
  const { default: variant } = await import("@jitl/quickjs-singlefile-mjs-release-sync");
  const { newQuickJSWASMModuleFromVariant } = await import("quickjs-emscripten-core");
  let bytes: Uint8Array | undefined;
  const original = WebAssembly.instantiate;
  (WebAssembly as { instantiate: unknown }).instantiate = function (this: unknown, ...args: unknown[]) {
    const a = args[0];
    if (!bytes && a instanceof ArrayBuffer) bytes = new Uint8Array(a.slice(0));
    else if (!bytes && ArrayBuffer.isView(a)) bytes = new Uint8Array(a.buffer.slice(a.byteOffset, a.byteOffset + a.byteLength));
    return (original as (...x: unknown[]) => unknown).apply(this, args);
  };
  try {
    await newQuickJSWASMModuleFromVariant(variant);
  } finally {
    (WebAssembly as { instantiate: unknown }).instantiate = original;
  }
  if (!bytes || bytes[0] !== 0 || bytes[1] !== 0x61 || bytes[2] !== 0x73 || bytes[3] !== 0x6d) throw new Error("could not take the QuickJS WASM bytes from its singlefile build");
  return bytes;
}

/**
 * `text` (the singlefile build's emscripten module) with its WASM template literal (the one starting
 * `` `\0asm ``) replaced by an empty one. @throws Error unless exactly one such literal is found.
 */
export function stripQuickJSWasm(text: string): string {
  const start = text.indexOf("`\\0asm");
  if (start < 0 || text.indexOf("`\\0asm", start + 1) >= 0) throw new Error("the QuickJS singlefile module does not hold exactly one WASM literal; update build/side.ts");
  let i = start + 1;
  while (i < text.length && text[i] !== "`") i += text[i] === "\\" ? 2 : 1;
  if (i >= text.length) throw new Error("the QuickJS WASM literal has no end; update build/side.ts");
  return `${text.slice(0, start)}\`\`${text.slice(i + 1)}`;
}

const stripPlugin: BunPlugin = {
  name: "airlock-strip-quickjs-wasm",
  setup(b) {
    b.onLoad({ filter: /quickjs-singlefile-mjs-release-sync[\\/]dist[\\/]emscripten-module-[^\\/]*\.mjs$/ }, async (args) => ({
      contents: stripQuickJSWasm(await Bun.file(args.path).text()),
      loader: "js",
    }));
  },
};

/**
 * Builds the side bundles and the compressed WASM into `outDir` and returns the module text that
 * replaces src/side/modules.ts. Each file is named by its content (`NAME-<sha256 prefix>.EXT.zst`) and
 * written through a rename, so builds running at once in one checkout never see a half-written file,
 * and the module text (whose import paths feed the bundler's chunk hashes) is the same for the same
 * sources: `outDir` must be a fixed folder for the build to be reproducible. `root` is the repository root; no path under it may appear in
 * a side bundle (the release must not embed the checkout's location). @throws Error with the bundler's messages.
 */
export async function buildSide(root: string, outDir: string): Promise<SideBuild> {
  mkdirSync(outDir, { recursive: true });
  const files: SideFile[] = [];
  const write = (name: string, ext: string, raw: Uint8Array): SideFile => {
    const sha256 = createHash("sha256").update(raw).digest("hex");
    const packed = Bun.zstdCompressSync(raw, { level: LEVEL });
    const file = join(outDir, `${name}-${sha256.slice(0, 16)}.${ext}.zst`);
    writeFileSync(`${file}.tmp-${process.pid}`, packed);
    renameSync(`${file}.tmp-${process.pid}`, file);
    const f = { name, file, bytes: raw.length, compressed_bytes: packed.length, sha256 };
    files.push(f);
    return f;
  };
  const lines: string[] = [
    `import { embeddedBytes, loadSide } from ${JSON.stringify(join(root, "src", "side", "load.ts"))};`,
    `import { memoryLayout } from ${JSON.stringify(join(root, "src", "side", "quickjs-layout.ts"))};`,
  ];
  const entries: string[] = [];
  for (const s of specs(root)) {
    const r = await Bun.build({ entrypoints: [s.entry], target: "bun", format: "esm", minify: true, external: s.external ?? [], throw: false });
    if (!r.success) throw new Error(`side bundle ${s.name} failed:\n${r.logs.map(String).join("\n")}`);
    if (r.outputs.length !== 1) throw new Error(`side bundle ${s.name} gave ${r.outputs.length} files, not one`);
    const text = await r.outputs[0]!.text();
    if (text.includes(root)) throw new Error(`side bundle ${s.name} embeds the checkout's path ${root}`);
    const f = write(s.name, "js", new TextEncoder().encode(text));
    const id = `f_${s.key}`;
    lines.push(`import ${id} from ${JSON.stringify(f.file)} with { type: "file" };`);
    entries.push(`  ${s.key}: () => loadSide({ name: ${JSON.stringify(s.name)}, path: ${id}, sha256: ${JSON.stringify(f.sha256)}, bytes: ${f.bytes} }),`);
  }
  const wasm = write("quickjs", "wasm", await quickjsWasmBytes());
  lines.push(`import f_wasm from ${JSON.stringify(wasm.file)} with { type: "file" };`);
  const module = [
    ...lines,
    `export const side = {`,
    ...entries,
    `};`,
    `export const SIDE_NAMES = Object.keys(side);`,
    `let compiled;`,
    `export function quickjsWasm() {`,
    `  compiled ??= embeddedBytes({ name: "quickjs-wasm", path: f_wasm, sha256: ${JSON.stringify(wasm.sha256)}, bytes: ${wasm.bytes} }).then(async (b) => ({ module: await WebAssembly.compile(b), layout: memoryLayout(b) }));`,
    `  compiled.catch(() => { compiled = undefined; });`,
    `  return compiled;`,
    `}`,
    ``,
  ].join("\n");
  return { module, files, plugin: stripPlugin };
}
