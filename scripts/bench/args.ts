/**
 * @module scripts/bench/args
 * The benches' numeric options (`--pairs 3`, `--cards 100000`): read from `process.argv`.
 */

/**
 * The number after `name` in `process.argv`, or `dflt` when `name` is absent. No checks: a bad value gives NaN
 * (the benches are run by hand; `floors.ts` has its own checked parser, floors-args.ts).
 */
export function arg(name: string, dflt: number): number {
  const i = process.argv.indexOf(name);
  return i >= 0 ? Number(process.argv[i + 1]) : dflt;
}
