/**
 * `bun scripts/bench/floors.ts` checks its command line before measuring: `--help` ran every step before
 * (minutes of both cores, and when interrupted it could leave a bare bubblewrap of its `confined` step behind),
 * and a typo in `--only` silently measured nothing.
 */
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { FLOOR_STEPS, parseFloorsArgs } from "../scripts/bench/floors-args.ts";

const FLOORS = join(import.meta.dir, "..", "scripts", "bench", "floors.ts");

describe("floors.ts argv", () => {
  test("parses --pairs, --binary, --only; defaults", () => {
    expect(parseFloorsArgs([])).toEqual({ help: false, pairs: 21, binary: undefined, only: undefined });
    expect(parseFloorsArgs(["--pairs", "5", "--binary", "/x/airlock", "--only", "startup,gate"])).toEqual({ help: false, pairs: 5, binary: "/x/airlock", only: ["startup", "gate"] });
    expect(parseFloorsArgs(["--only", FLOOR_STEPS.join(",")])).toMatchObject({ only: [...FLOOR_STEPS] });
  });

  test("-h / --help anywhere: help, nothing measured", () => {
    expect(parseFloorsArgs(["--help"])).toEqual({ help: true });
    expect(parseFloorsArgs(["--pairs", "3", "-h"])).toEqual({ help: true });
  });

  test("unknown arguments, missing or bad values and unknown steps are errors", () => {
    expect(() => parseFloorsArgs(["--pair", "3"])).toThrow('unknown argument "--pair"');
    expect(() => parseFloorsArgs(["--pairs"])).toThrow("--pairs needs a value");
    expect(() => parseFloorsArgs(["--pairs", "many"])).toThrow("--pairs wants a positive whole number, got many");
    expect(() => parseFloorsArgs(["--only", "startup,confind"])).toThrow('--only: unknown step "confind"');
    expect(() => parseFloorsArgs(["--binary", "--only"])).toThrow("--binary needs a value");
  });

  test("the script itself: --help prints the usage and exits 0 at once; a bad argument exits 2", async () => {
    const run = async (args: string[]) => {
      const p = Bun.spawn([process.execPath, FLOORS, ...args], { stdout: "pipe", stderr: "pipe", stdin: "ignore" });
      const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
      return { stdout, stderr, code };
    };
    const help = await run(["--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("usage: bun scripts/bench/floors.ts");
    expect(help.stderr).not.toContain("[floors]");
    const bad = await run(["--only", "nope"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('floors: --only: unknown step "nope"');
    expect(bad.stderr).not.toContain("[floors]");
  }, 30_000);
});
