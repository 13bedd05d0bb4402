/**
 * @module scripts/bench/embedded
 * What the compiled binary's bytes are, printed as JSON: the binary's size over the Bun runtime it was
 * made from; every file Bun embeds (its module graph: each chunk's source and JavaScriptCore bytecode,
 * the side bundles and the QuickJS WASM, zstd-compressed) with sizes, biggest first; each side file's
 * size before and after compression; and the biggest source modules of the main bundle (the bundler's
 * metafile for the same entries, no bytecode). Builds into a temp dir (build/build.ts, build/side.ts).
 *
 * The module graph is read from the binary's tail as Bun 1.4's `StandaloneModuleGraph` lays it out
 * (src/StandaloneModuleGraph.zig in oven-sh/bun: the trailer `\n---- Bun! ----\n`, before it the
 * offsets {byte_count u64, modules {offset u32, length u32}, entry u32, argv {u32, u32}, flags u32},
 * and a table of 52-byte records: six {offset, length} pointers — name, contents, source map, bytecode,
 * module info, bytecode origin — and four one-byte fields). A record that does not read as a
 * `/$bunfs/` name fails the bench (the layout changed with the Bun version).
 * Usage: `bun scripts/bench/embedded.ts [--top 25]`
 */
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { build, ROOT } from "../../build/build.ts";
import { buildSide } from "../../build/side.ts";

const TOP = Number(process.argv[process.argv.indexOf("--top") + 1] || 25);

/** One embedded file of the module graph (bytes). */
export interface EmbeddedFile {
  name: string;
  /** Where its contents start in the binary (a file offset). */
  contents_offset: number;
  contents_bytes: number;
  bytecode_bytes: number;
}

/**
 * The embedded files of a `bun build --compile` binary, and the graph's total bytes.
 * @throws Error when the trailer or a record does not read as Bun 1.4's layout.
 */
export function moduleGraph(bytes: Uint8Array): { graph_bytes: number; files: EmbeddedFile[] } {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const t = buf.lastIndexOf("\n---- Bun! ----\n");
  if (t < 0) throw new Error("no Bun module graph trailer in the binary");
  const graphBytes = Number(buf.readBigUInt64LE(t - 32));
  const tableOffset = buf.readUInt32LE(t - 24);
  const tableLength = buf.readUInt32LE(t - 20);
  const base = t - 32 - graphBytes;
  const RECORD = 52;
  if (tableLength % RECORD !== 0) throw new Error(`module table of ${tableLength} bytes is not a whole number of ${RECORD}-byte records`);
  const files: EmbeddedFile[] = [];
  for (let at = base + tableOffset; at < base + tableOffset + tableLength; at += RECORD) {
    const ptr = (k: number) => [buf.readUInt32LE(at + 8 * k), buf.readUInt32LE(at + 8 * k + 4)] as const;
    const [no, nl] = ptr(0);
    const name = buf.toString("utf8", base + no, base + no + nl);
    if (!name.startsWith("/$bunfs/")) throw new Error(`module record at ${at} does not name a /$bunfs/ file (${JSON.stringify(name.slice(0, 40))})`);
    files.push({ name: name.replace("/$bunfs/root/", ""), contents_offset: base + ptr(1)[0], contents_bytes: ptr(1)[1], bytecode_bytes: ptr(3)[1] });
  }
  return { graph_bytes: graphBytes, files };
}

if (import.meta.main) {
  const dir = mkdtempSync(join(tmpdir(), "airlock-bench-embedded-"));
  try {
    const runtime = statSync(join(ROOT, "node_modules", "bun", "bin", "bun.exe")).size;
    const r = await build({ force: true, outfile: join(dir, "airlock"), executablePath: join(ROOT, "node_modules", "bun", "bin", "bun.exe") });
    const { graph_bytes, files } = moduleGraph(readFileSync(r.outfile));
    files.sort((a, b) => b.contents_bytes + b.bytecode_bytes - (a.contents_bytes + a.bytecode_bytes));
    const sum = (f: (x: EmbeddedFile) => number) => files.reduce((n, x) => n + f(x), 0);
    const side = await buildSide(ROOT, join(dir, "side"));
    // The main bundle's biggest source modules: the same entries, bundled without compiling.
    process.chdir(ROOT);
    const meta = await Bun.build({
      entrypoints: [join(ROOT, "src", "boot.ts"), join(ROOT, "src", "script", "worker.ts")],
      files: { [join(ROOT, "src", "side", "modules.ts")]: side.module },
      plugins: [side.plugin],
      root: ROOT,
      format: "esm",
      minify: true,
      splitting: true,
      target: "bun",
      outdir: join(dir, "meta"),
      metafile: true,
      throw: true,
    } as Parameters<typeof Bun.build>[0] & { metafile: boolean });
    const inputs: { path: string; bytes: number }[] = [];
    for (const o of Object.values((meta as unknown as { metafile: { outputs: Record<string, { inputs?: Record<string, { bytesInOutput: number }> }> } }).metafile.outputs)) {
      for (const [path, v] of Object.entries(o.inputs ?? {})) inputs.push({ path: path.replace(/^.*node_modules\//, "node_modules/"), bytes: v.bytesInOutput });
    }
    inputs.sort((a, b) => b.bytes - a.bytes);
    console.log(
      JSON.stringify({
        binary_bytes: r.bytes,
        runtime_bytes: runtime,
        over_runtime_bytes: r.bytes - runtime,
        graph_bytes,
        embedded: { files: files.length, contents_bytes: sum((x) => x.contents_bytes), bytecode_bytes: sum((x) => x.bytecode_bytes), biggest: files.slice(0, TOP).map(({ contents_offset: _, ...f }) => f) },
        side: side.files.map(({ name, bytes, compressed_bytes, sha256 }) => ({ name, bytes, compressed_bytes, sha256 })),
        bundle_biggest_modules: inputs.slice(0, TOP),
      }),
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
