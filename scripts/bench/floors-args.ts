/**
 * @module scripts/bench/floors-args
 * The command line of `scripts/bench/floors.ts`, checked before any step runs: `--help` prints the usage
 * and measures nothing, and an unknown option, a missing or bad value, or an unknown `--only` step is an
 * error (exit 2) rather than a full run of every step (several minutes of both cores) with the typo ignored.
 */

/** The steps `--only` may name, in the order they run. */
export const FLOOR_STEPS = ["startup", "first", "confined", "gate", "bridge", "park", "park-idle", "park-proc", "park-idle-proc"] as const;

export const FLOORS_USAGE =
  `usage: bun scripts/bench/floors.ts [--pairs N] [--binary PATH] [--only STEP,...]\n` +
  `  --pairs N       pairs per ratio (default 21; some steps take more)\n` +
  `  --binary PATH   time this airlock binary for the startup step (default: dist/airlock, built if stale)\n` +
  `  --only STEPS    some of: ${FLOOR_STEPS.join(", ")}\n` +
  `  -h, --help      print this and exit\n` +
  `AIRLOCK_BENCH_ROOT=/other/checkout measures that checkout's script pool in the bridge step, and its gate, cards, store and pool in the gate step. Prints one JSON object; see docs/performance.md.\n`;

export type FloorsArgs = { help: true } | { help: false; pairs: number; binary: string | undefined; only: string[] | undefined };

/** Parses argv (without the runtime and script). @throws Error naming the bad argument. */
export function parseFloorsArgs(argv: readonly string[]): FloorsArgs {
  let pairs = 21;
  let binary: string | undefined;
  let only: string[] | undefined;
  const value = (i: number, name: string): string => {
    const v = argv[i];
    if (v === undefined || v.startsWith("-")) throw new Error(`${name} needs a value`);
    return v;
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === "-h" || a === "--help") return { help: true };
    if (a === "--pairs") {
      const v = value(++i, a);
      pairs = Number(v);
      if (!Number.isInteger(pairs) || pairs < 1) throw new Error(`--pairs wants a positive whole number, got ${v}`);
    } else if (a === "--binary") binary = value(++i, a);
    else if (a === "--only") {
      only = value(++i, a).split(",");
      const unknown = only.filter((s) => !(FLOOR_STEPS as readonly string[]).includes(s));
      if (unknown.length) throw new Error(`--only: unknown step ${unknown.map((s) => `"${s}"`).join(", ")}; known: ${FLOOR_STEPS.join(", ")}`);
    } else throw new Error(`unknown argument "${a}"`);
  }
  return { help: false, pairs, binary, only };
}
