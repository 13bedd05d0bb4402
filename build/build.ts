/**
 * @module build/build
 * Compiles airlock into one executable, `dist/airlock` (`bun build --compile --minify --splitting
 * --format=esm` from src/boot.ts), with the sandbox worker and tinypool's worker entry embedded as extra
 * entrypoints. JavaScriptCore bytecode for the start path only (build/bytecode.ts, {@link START_PATH}): Bun 1.4
 * embeds bytecode for every chunk or none (all: +7.7 MB, past issue 22's 8 MB over the runtime), so the
 * binary is compiled with bytecode and its embedded module graph is then rewritten to keep it only for the
 * chunks of boot, the usage table's reader, run-argv and the early request (and what they import), plus
 * the parts that bytecode needs (the bytecode string table, the pre-linked module graph) and Bun's bytecode
 * for the three JS builtins the early path loads ({@link START_BUILTINS}): +1.1 MB. Callgrind instructions
 * of `airlock run` to its early request 26.8M → 11.6M, `--version` 4.93M → 3.61M, `--help` 6.80M → 4.89M,
 * argument error 6.54M → 4.17M
 * (docs/performance.md, issue 20, tenth session). The rarely used big dependencies and the QuickJS WASM are
 * embedded zstd-compressed (build/side.ts). Code splitting keeps each command's modules (providers, MCP,
 * hono, the script worker's WASM, zod schemas) in chunks loaded on first use, so `--version`, `--help` and
 * usage errors evaluate only what they need (docs/performance.md, cold start).
 * Skips the build when the binary is newer than every source file, unless `--force`. Reports on stderr.
 * Builds of one output file are serialised by a lock folder beside it (`<outfile>.lock`), and the binary
 * is written under a temporary name then renamed, so test files running at once (`bun test --parallel`)
 * build it once and never copy a half-written file.
 */
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { basename, dirname, join, relative } from "node:path";
import { recordHelpTexts } from "./help-texts.ts";
import { keepBytecode, startPathChunks } from "./bytecode.ts";
import { buildSide } from "./side.ts";

export const ROOT = join(import.meta.dir, "..");
export const OUTFILE = join(ROOT, "dist", "airlock");
/** Folders and files whose change makes the binary stale. */
const SOURCES = ["src", "build", "package.json", "package-lock.json", "tsconfig.json"];

function newestMtime(path: string): number {
  let st;
  try {
    st = statSync(path);
  } catch {
    return 0;
  }
  if (!st.isDirectory()) return st.mtimeMs;
  let newest = st.mtimeMs;
  for (const name of readdirSync(path)) {
    if (name === "node_modules" || name.startsWith(".")) continue;
    newest = Math.max(newest, newestMtime(join(path, name)));
  }
  return newest;
}

/** True when `dist/airlock` exists and is newer than every source file. */
export function isFresh(outfile = OUTFILE): boolean {
  let built: number;
  try {
    built = statSync(outfile).mtimeMs;
  } catch {
    return false;
  }
  return SOURCES.every((s) => newestMtime(join(ROOT, s)) < built);
}

export interface BuildResult {
  built: boolean;
  outfile: string;
  bytes: number;
  ms: number;
}

/** What to build: `target`/`executablePath` cross-compile (build/release.ts); `define` replaces identifiers at compile time. */
export interface BuildOptions {
  force?: boolean;
  outfile?: string;
  /** A `bun build --compile --target` name, e.g. `bun-linux-arm64`; default: the running Bun's own platform. */
  target?: Bun.Build.CompileTarget;
  /** The Bun runtime binary the executable is made from (`--compile-executable-path`); default: Bun's own choice. */
  executablePath?: string;
  /** Identifier → JS expression text (`--define`). */
  define?: Record<string, string>;
  /**
   * Which chunks carry JavaScriptCore bytecode: `"start"` (default) the start path's ({@link START_PATH},
   * build/bytecode.ts), `"none"` none, `"all"` every chunk (Bun's own `bytecode: true`, for comparisons; past
   * issue 22's size limit). See the module note.
   */
  bytecode?: "none" | "start" | "all";
  /** The target-independent inputs, recorded once by the caller ({@link compileInputs}); default: recorded for this build. */
  inputs?: CompileInputs;
}

/**
 * Builds the binary unless it is fresh (or `force`). Throws an Error naming the bundler's messages on failure.
 * The tinypool shim must sit at `<bundle root>/entry/worker.ts`; the bundle root is the repo root (the
 * `root` given to the bundler; src/main.ts, src/script/worker.ts and src/store/checkpoint-worker.ts keep their paths under it), so the shim is given to the bundler as an
 * in-memory file at that path (`Bun.build({files})`), its text taken from build/tinypool-entry.ts.
 * The console page (src/console/) is bundled first and replaces src/console/embedded.ts the same way, so the
 * binary serves it without bundling at run time.
 */
export async function build(opts: BuildOptions = {}): Promise<BuildResult> {
  const outfile = opts.outfile ?? OUTFILE;
  const t0 = performance.now();
  if (!opts.force && isFresh(outfile)) {
    return { built: false, outfile, bytes: statSync(outfile).size, ms: performance.now() - t0 };
  }
  mkdirSync(dirname(outfile), { recursive: true });
  const release = await lockOutput(outfile);
  try {
    // Another process may have built it while this one waited for the lock.
    if (!opts.force && isFresh(outfile)) {
      return { built: false, outfile, bytes: statSync(outfile).size, ms: performance.now() - t0 };
    }
    // The file's name is embedded in the binary (its folder is not): same name, a private folder.
    const partialDir = join(dirname(outfile), `.build-${process.pid}`);
    try {
      mkdirSync(partialDir, { recursive: true });
      await compile(opts, join(partialDir, basename(outfile)));
      renameSync(join(partialDir, basename(outfile)), outfile);
    } finally {
      rmSync(partialDir, { recursive: true, force: true });
    }
  } finally {
    release();
  }
  return { built: true, outfile, bytes: statSync(outfile).size, ms: performance.now() - t0 };
}

/** True when process `pid` still runs (signal 0 reaches it). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * Takes the lock folder `<outfile>.lock` (mkdir is atomic), holding the owner's pid; waits while a live
 * process holds it and takes over a lock whose owner is gone (a build killed midway, or one killed before
 * it wrote its pid a minute ago). Returns the release. Also used by test/harness-release.ts for the
 * release folder shared by the test files of one run. Throws the file system's error other than EEXIST.
 */
export async function lockOutput(outfile: string): Promise<() => void> {
  const dir = `${outfile}.lock`;
  for (;;) {
    try {
      mkdirSync(dir);
      writeFileSync(join(dir, "pid"), String(process.pid));
      return () => rmSync(dir, { recursive: true, force: true });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
    }
    let owner = NaN;
    try {
      owner = Number(readFileSync(join(dir, "pid"), "utf8"));
    } catch {
      // the owner has not written its pid yet, or just released the lock
    }
    const orphan = Number.isNaN(owner) && Date.now() - (statSync(dir, { throwIfNoEntry: false })?.mtimeMs ?? Date.now()) > 60_000;
    if ((Number.isInteger(owner) && owner > 0 && !alive(owner)) || orphan) {
      rmSync(dir, { recursive: true, force: true });
      continue;
    }
    await Bun.sleep(50);
  }
}

// A relative key lands at <root>/entry/worker.js in the binary (an absolute key would be embedded under
// its full path); a virtual file has no folder, so its import is made absolute.
// Bun resolves a relative virtual key against the working directory, so build from ROOT.
const SHIM_PATH = "entry/worker.ts";

/**
 * What every compile embeds whatever its target: the tinypool shim and the generated modules that replace
 * files of src/ (console page, help texts, usage table, side bundles, tool specs, build id), keyed by the
 * path they replace, and the side bundles' plugin. Recording them is most of a build's time (the help
 * texts run the source CLI 70 times, the side bundles are bundled: 54 s and 24 s at load ~20, when a
 * whole build took 67 s), so build/release.ts records them once for its three targets ({@link BuildOptions.inputs}).
 */
export interface CompileInputs {
  files: Record<string, string>;
  plugins: Bun.BunPlugin[];
}

/** Records {@link CompileInputs} from the checkout. Throws an Error when a part cannot be recorded (a help text, a side bundle). */
export async function compileInputs(): Promise<CompileInputs> {
  const shim = readFileSync(join(import.meta.dir, "tinypool-entry.ts"), "utf8").replace(
    /(["'])\.\.\/node_modules\//g,
    (_m, q: string) => `${q}${join(ROOT, "node_modules")}/`,
  );
  // The console page is bundled here and embedded as text: src/console/embedded.ts is replaced by the bundle.
  const { bundleConsole, embeddedModule } = await import("../src/console/bundle.ts");
  const consoleModule = embeddedModule(await bundleConsole());
  // The help texts are recorded from the source CLI and embedded: src/cli/canned-help.ts is replaced by an
  // index and one module per text, which need not exist on disk (src/boot.ts).
  const { cannedHelpModules } = await import("../src/cli/canned-help.ts");
  const helpModules = Object.fromEntries(
    Object.entries(cannedHelpModules(await recordHelpTexts())).map(([name, text]) => [join(ROOT, "src", "cli", name), text]),
  );
  // The usage table is read from the same program: src/cli/canned-usage.ts is replaced (src/cli/usage-error.ts).
  const { cannedUsageModule } = await import("../src/cli/canned-usage.ts");
  const { usageTable } = await import("./usage-table.ts");
  const usageModule = cannedUsageModule(await usageTable());
  // The rarely used big dependencies and the QuickJS WASM are embedded compressed (build/side.ts):
  // src/side/modules.ts is replaced by the generated loader table. A fixed folder: the files' paths
  // feed the chunk hashes, so a temp folder would make two builds differ.
  const sideBuild = await buildSide(ROOT, join(ROOT, "dist", ".side"));
  // The built-in tools' argument JSON Schemas are recorded too: src/tool/canned-specs.ts is replaced (src/tool/tool.ts).
  const { cannedSpecsModule } = await import("../src/tool/canned-specs.ts");
  const { recordToolParameters, recordOfferedSpecs } = await import("./tool-specs.ts");
  const specsModule = cannedSpecsModule(recordToolParameters(), recordOfferedSpecs());
  // The build id keys `airlock run`'s validated-config cache (src/cli/early-request.ts): src/cli/canned-build.ts is replaced.
  const { buildIdModule, treeDigest } = await import("../src/cli/canned-build.ts");
  const { version } = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { version: string };
  const buildModule = buildIdModule(treeDigest(join(ROOT, "src"), `airlock ${version} bun ${Bun.version}`));
  return {
    files: {
      [SHIM_PATH]: shim,
      [join(ROOT, "src", "console", "embedded.ts")]: consoleModule,
      ...helpModules,
      [join(ROOT, "src", "cli", "canned-usage.ts")]: usageModule,
      [join(ROOT, "src", "side", "modules.ts")]: sideBuild.module,
      [join(ROOT, "src", "tool", "canned-specs.ts")]: specsModule,
      [join(ROOT, "src", "cli", "canned-build.ts")]: buildModule,
    },
    plugins: [sideBuild.plugin, inlineTextPlugin],
  };
}

/**
 * Bundles src/'s `.txt` imports (`with { type: "text" }`: system prompts, tool descriptions) into the chunk
 * that imports them, as a JS string module, instead of Bun's default for a compiled split build: each text a
 * file of its own in the executable, read through the module loader at run time without bytecode (one
 * `[Disk Cache] Cache miss` each). The first text `airlock run` loaded before its early request cost 0.57M
 * callgrind instructions, the three system prompts 0.96M (docs/performance.md, issue 20, branch wip/early5).
 * The string is the file's text unchanged (UTF-8), as the text loader gives it.
 */
const inlineTextPlugin: Bun.BunPlugin = {
  name: "airlock-inline-text",
  setup(b) {
    // this checkout's src/ only (a dependency's .txt keeps Bun's own loader); the path is escaped for the RegExp
    const srcDir = join(ROOT, "src") + "/";
    b.onLoad({ filter: new RegExp(`^${srcDir.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}.*\\.txt$`) }, async (args) => ({
      contents: `export default ${JSON.stringify(await Bun.file(args.path).text())};`,
      loader: "js",
    }));
  },
};

/**
 * The modules whose chunks (and what those import statically) keep their bytecode: the binary's entry and
 * what `airlock run` loads up to its early request (src/boot.ts `handOff`). Paths relative to the bundle root.
 */
export const START_PATH: readonly string[] = ["src/boot.ts", "src/cli/run-argv.ts", "src/cli/early-request.ts"];

/**
 * Bun's JS builtins (internal module registry ids, per Bun version) whose bytecode the binary keeps: the
 * ones `airlock run` loads before its early request, found by dropping each in turn from a binary with all
 * 109 and counting callgrind instructions to the request (docs/performance.md, issue 20, tenth session:
 * these three take it from 17.5M with none to 11.6M; all 109, 1.9 MB, to 11.2M). The ids mean nothing to
 * another Bun: for a version not listed every builtin's bytecode is kept (the release size test then
 * fails until the list is measured again).
 */
export const START_BUILTINS: Readonly<Record<string, readonly number[]>> = { "1.4.4": [159, 71, 127] };

/** Bundles and compiles the binary into `outfile` (see {@link build}). */
async function compile(opts: BuildOptions, outfile: string): Promise<void> {
  const inputs = opts.inputs ?? (await compileInputs());
  const bytecode = opts.bytecode ?? "start";
  const cwd = process.cwd();
  process.chdir(ROOT);
  const result = await Bun.build({
    entrypoints: [join(ROOT, "src", "boot.ts"), join(ROOT, "src", "script", "worker.ts"), join(ROOT, "src", "store", "checkpoint-worker.ts"), SHIM_PATH],
    files: inputs.files,
    plugins: inputs.plugins,
    root: ROOT,
    format: "esm",
    minify: true,
    bytecode: bytecode !== "none",
    metafile: bytecode === "start",
    splitting: true,
    target: "bun",
    compile: {
      outfile,
      autoloadDotenv: false,
      autoloadBunfig: false,
      ...(opts.target ? { target: opts.target } : {}),
      ...(opts.executablePath ? { executablePath: opts.executablePath } : {}),
    },
    ...(opts.define ? { define: opts.define } : {}),
    throw: false,
  }).finally(() => process.chdir(cwd));
  if (!result.success) {
    throw new Error(`bun build failed:\n${result.logs.map((l) => String(l)).join("\n")}`);
  }
  switch (bytecode) {
    case "none":
    case "all":
      return;
    case "start": {
      if (!result.metafile) throw new Error("bun build gave no metafile: the start path's chunks cannot be told apart");
      const keep = startPathChunks(result.metafile, START_PATH);
      const builtins = START_BUILTINS[Bun.version];
      if (builtins === undefined) process.stderr.write(`build: no start-path builtin list for Bun ${Bun.version}: keeping every builtin's bytecode\n`);
      const { bytes } = keepBytecode(new Uint8Array(readFileSync(outfile)), keep, { builtins: builtins ? new Set(builtins) : "all" });
      writeFileSync(outfile, bytes, { mode: 0o755 });
      return;
    }
    default: {
      const unknown: never = bytecode;
      throw new Error(`unknown bytecode choice ${String(unknown)}`);
    }
  }
}

if (import.meta.main) {
  const force = process.argv.includes("--force");
  try {
    const r = await build({ force });
    const rel = relative(process.cwd(), r.outfile) || r.outfile;
    process.stderr.write(
      r.built
        ? `build: compiled ${rel} (${(r.bytes / 1e6).toFixed(1)} MB) in ${Math.round(r.ms)} ms\n`
        : `build: ${rel} is newer than every source file; skipped (pass --force to rebuild)\n`,
    );
  } catch (e) {
    process.stderr.write(`build: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(1);
  }
}
