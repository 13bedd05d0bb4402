/**
 * @module boot
 * The compiled binary's entry (build/build.ts): answers `--version`, the recorded help texts
 * (cli/canned-help.ts) and the argument errors its usage table decides (cli/usage-error.ts, table in
 * cli/canned-usage.ts: the same stderr and exit code as commander) without loading commander or any Node built-in, so they start about as fast as a
 * bare Bun binary (docs/performance.md, cold start); everything else goes to `main.ts`, loaded on demand.
 * Its output is the same bytes `main.ts` would print: the version line, or the help text commander
 * printed for the same argv at build time (recorded with stdout not a terminal, so it is only used when
 * stdout is a pipe, a file or a socket; on a terminal commander wraps help to its width).
 */
import { version } from "../package.json" with { type: "json" };
import { CANNED_HELP } from "./cli/canned-help.ts";
import { CANNED_USAGE } from "./cli/canned-usage.ts";
import { usageError } from "./cli/usage-error.ts";

/**
 * What the binary can answer without `main.ts`: the text for stdout of an exit-0 invocation, or
 * `undefined` (then `main.ts` decides). `stdoutIsTerminal` is only called for help texts.
 */
export async function quickAnswer(argv: readonly string[], stdoutIsTerminal: () => Promise<boolean>): Promise<string | undefined> {
  if (argv.length === 1 && (argv[0] === "--version" || argv[0] === "-V")) return `${version}\n`;
  const text = CANNED_HELP?.[argv.join("\0")];
  if (text === undefined || (await stdoutIsTerminal())) return undefined;
  return text;
}

/** Whether fd 1 may be a terminal: anything but a pipe, a regular file or a socket counts (a failed stat too). */
async function stdoutMayBeTerminal(): Promise<boolean> {
  try {
    const st = await Bun.stdout.stat();
    return !(st.isFIFO() || st.isFile() || st.isSocket());
  } catch {
    return true;
  }
}

if (import.meta.main) {
  const argv = process.argv.slice(2);
  const quick = await quickAnswer(argv, stdoutMayBeTerminal);
  if (quick !== undefined) {
    try {
      await Bun.write(Bun.stdout, quick);
    } catch {
      // a reader that went away (EPIPE): as main.ts's writeAll, the write ends silently
    }
    process.exit(0);
  }
  const bad = CANNED_USAGE === null ? undefined : usageError(argv, CANNED_USAGE);
  if (bad !== undefined) {
    try {
      await Bun.write(Bun.stderr, bad.stderr);
    } catch {
      // stderr closed: the exit code still says it
    }
    process.exit(bad.exitCode);
  }
  const { main } = await import("./main.ts");
  process.exit(await main(argv));
}
