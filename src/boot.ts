/**
 * @module boot
 * The compiled binary's entry (build/build.ts): answers `--version`, the recorded help texts
 * (cli/canned-help.ts) and the argument errors its usage table decides (cli/usage-error.ts, table in
 * cli/canned-usage.ts: the same stderr and exit code as commander, unknown options and commands with its
 * "(Did you mean …?)" included) without loading commander or any Node built-in, so they start about as fast as a
 * bare Bun binary (docs/performance.md, cold start); `airlock run` in its plain forms (cli/run-argv.ts, read
 * from the same table) goes straight to cli/run.ts; everything else goes to `main.ts`, loaded on demand.
 * Its output is the same bytes `main.ts` would print: the version line, or the help text commander
 * printed for the same argv at build time (recorded with stdout not a terminal, so it is only used when
 * stdout is not a terminal; on a terminal commander wraps help to its width).
 */
import { version } from "../package.json" with { type: "json" };
import { cannedHelp } from "./cli/canned-help.ts";
import { cannedUsageFor } from "./cli/canned-usage.ts";
import { startHttpClient } from "./cli/early-switch.ts";
import { usageError, type UsageTable } from "./cli/usage-error.ts";

/**
 * What the binary can answer without `main.ts`: the text for stdout of an exit-0 invocation, or
 * `undefined` (then `main.ts` decides). `stdoutIsTerminal` is only called for help texts.
 */
export async function quickAnswer(argv: readonly string[], stdoutIsTerminal: () => Promise<boolean>): Promise<string | undefined> {
  const version = versionAnswer(argv);
  if (version !== undefined) return version;
  const load = await helpLoader(argv);
  if (load === undefined || (await stdoutIsTerminal())) return undefined;
  return await load();
}

/** The stdout text of `--version` or `-V` alone (`"0.1.0\n"`), or `undefined` for any other argv. */
export function versionAnswer(argv: readonly string[]): string | undefined {
  return argv.length === 1 && (argv[0] === "--version" || argv[0] === "-V") ? `${version}\n` : undefined;
}

/**
 * Resolves to the loader of the recorded help text for `argv` (it imports that text's module), or to `undefined`
 * when `argv` is no recorded help invocation (always from source); `undefined` itself, at once, when `argv` surely
 * is none ({@link mayBeHelp}), so the help index is loaded only for an argv that may be help. Each text is loaded
 * only for its own invocation: the binary has no bytecode, and parsing all ~70 KB of them costs about 0.6 ms
 * (docs/performance.md, 2026-12-02).
 */
export function helpLoader(argv: readonly string[]): Promise<(() => Promise<string>) | undefined> | undefined {
  return !mayBeHelp(argv) || cannedHelp === null ? undefined : cannedHelp(argv.join("\0"));
}

/**
 * Writes `text` whole to fd 1 (`stdout`) or fd 2 (`stderr`), then exits with `code`. A text ending in a newline
 * goes through `console.log` / `console.error` with that newline dropped (the console adds it back; a single
 * string is printed as is, no format directives): one synchronous write, about 0.4 ms less than a first
 * `Bun.write`, which waits on the thread pool (docs/performance.md, 2026-12-02), and the process ends in this
 * turn of the event loop. Other texts go through `Bun.write`, then exit. A closed reader (EPIPE) ends the write
 * silently, as main.ts's writeAll does: the exit code still says it.
 */
function exitWith(to: "stdout" | "stderr", text: string, code: number): void {
  if (!text.endsWith("\n")) {
    const exit = (): never => process.exit(code);
    void Bun.write(to === "stdout" ? Bun.stdout : Bun.stderr, text).then(exit, exit);
    return;
  }
  try {
    switch (to) {
      case "stdout":
        console.log(text.slice(0, -1));
        break;
      case "stderr":
        console.error(text.slice(0, -1));
        break;
      default: {
        const unknown: never = to;
        throw new Error(`unknown stream ${String(unknown)}`);
      }
    }
  } catch {
    // a reader that went away: the exit code still says it
  }
  process.exit(code);
}

/**
 * Whether `argv` may be one of the recorded help invocations (build/help-texts.ts `helpInvocations`: `help`,
 * `help NAME`, and `… --help` / `… -h` of every command): false means surely not, so the texts need not be
 * loaded. test/e2e/binary-startup.test.ts checks every recorded invocation passes.
 */
export function mayBeHelp(argv: readonly string[]): boolean {
  const last = argv[argv.length - 1];
  return argv[0] === "help" || last === "--help" || last === "-h";
}

/**
 * Whether fd 1 is a terminal, by commander's own test (`process.stdout.isTTY`, which wraps help to the
 * terminal's width): asked of `process.binding("tty_wrap").isTTY(1)`, an isatty(3) without building the
 * Node stream `process.stdout` (several ms) and about 0.6 ms less than `Bun.stdout.stat()`, which waits on
 * the thread pool (docs/performance.md, 2026-12-02). Where that binding is missing or answers other than a
 * boolean, falls back to `fstat`: anything but a pipe, a regular file or a socket counts (a failed stat too).
 */
async function stdoutMayBeTerminal(): Promise<boolean> {
  try {
    const tty = (process as unknown as { binding(name: string): { isTTY?: unknown } }).binding("tty_wrap");
    const answer: unknown = typeof tty.isTTY === "function" ? tty.isTTY(1) : undefined;
    if (typeof answer === "boolean") return answer;
  } catch {
    // no such binding here: the stat decides
  }
  try {
    const st = await Bun.stdout.stat();
    return !(st.isFIFO() || st.isFile() || st.isSocket());
  } catch {
    return true;
  }
}

/**
 * `airlock --check-embedded` (a diagnostic, not in the help): loads every side bundle and compiles the
 * QuickJS WASM (side/modules.ts), each checked against its build-time SHA-256, and prints one JSON line:
 * `{"side": {NAME: [export names…]}, "quickjs_wasm": bool, "quickjs_layout": {staticEnd, heapBase, breakAt} | null}`
 * (`quickjs_wasm` false and `quickjs_layout` null from source, where the package compiles its own; `quickjs_layout`
 * null in the binary means its scripts get no guest snapshot: side/quickjs-layout.ts), exit 0; when one fails to load its
 * message goes to stderr, exit 1.
 */
async function checkEmbedded(): Promise<string> {
  const { side, SIDE_NAMES, quickjsWasm } = await import("./side/modules.ts");
  const out: Record<string, string[]> = {};
  for (const name of SIDE_NAMES) out[name] = Object.keys(await side[name]()).sort();
  const wasm = await quickjsWasm();
  return `${JSON.stringify({ side: out, quickjs_wasm: wasm?.module instanceof WebAssembly.Module, quickjs_layout: wasm?.layout ?? null })}\n`;
}

/**
 * The binary's start, synchronous up to its answer for `--version`, an argument error and the hand-off: no
 * top-level `await`, so the module body compiles as plain code, and each async step below is compiled only
 * when its argv needs it (docs/performance.md, issue 20, branch `wip/cold`).
 */
function start(argv: string[]): void {
  const versionLine = versionAnswer(argv);
  if (versionLine !== undefined) return exitWith("stdout", versionLine, 0);
  if (argv.length === 1 && argv[0] === "--check-embedded") {
    void checkEmbedded().then(
      (text) => Bun.write(Bun.stdout, text).then(() => process.exit(0)),
      (e: unknown) => {
        process.stderr.write(`airlock: ${e instanceof Error ? e.message : String(e)}\n`);
        process.exit(1);
      },
    );
    return;
  }
  const lookup = helpLoader(argv);
  if (lookup !== undefined) {
    void help(argv, lookup);
    return;
  }
  afterHelp(argv);
}

/** An argv that may be help: a recorded text when stdout is no terminal, else what follows help ({@link afterHelp}). */
async function help(argv: string[], lookup: Promise<(() => Promise<string>) | undefined>): Promise<void> {
  const load = await lookup;
  if (load === undefined || (await stdoutMayBeTerminal())) return afterHelp(argv);
  const text = await load();
  exitWith("stdout", text, 0);
}

/** Past `--version` and help: an argument error of the usage table, else `airlock run` or `main.ts`. */
function afterHelp(argv: string[]): void {
  // Parsed only past --version and help, and only the part of the table this argv reaches (no bytecode:
  // parsing costs). The reader, cli/usage-error.ts, is a ~4 KB chunk boot imports statically.
  const table = cannedUsageFor === null ? null : cannedUsageFor(argv[0]);
  const bad = table === null ? undefined : usageError(argv, table);
  if (bad !== undefined) return exitWith("stderr", bad.stderr, bad.exitCode);
  void handOff(argv, table);
}

/** `airlock run` in its plain forms (read from the same table) without commander, or `main.ts`. */
async function handOff(argv: string[], table: UsageTable | null): Promise<void> {
  // Bun's HTTP client thread starts while the early request reads its config (cli/early-switch.ts)
  if (argv[0] === "run") startHttpClient(process.env);
  const direct = table === null ? undefined : (await import("./cli/run-argv.ts")).readRunArgv(argv, table);
  if (direct !== undefined) {
    // the early request first (cli/early-request.ts): it may leave before run.ts and output.ts are even loaded
    const early = await (await import("./cli/early-request.ts")).startEarlyRequest(direct.prompt, direct.opts);
    const [{ run }, { reportError }] = await Promise.all([import("./cli/run.ts"), import("./cli/output.ts")]);
    let code: number;
    try {
      code = await run(direct.prompt, direct.opts, early ?? null);
    } catch (e) {
      // as main.ts: an error thrown by the command is the CLI's one error line and its exit code
      code = reportError(e);
    }
    process.exit(code);
  }
  const { main } = await import("./main.ts");
  process.exit(await main(argv));
}

if (import.meta.main) start(process.argv.slice(2));
