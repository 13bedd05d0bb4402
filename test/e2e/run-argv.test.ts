/**
 * @module test/e2e/run-argv.test
 * `airlock run` without commander (src/cli/run-argv.ts, src/boot.ts): the arguments it reads give the very
 * PROMPT and options commander's action gets, everything else is left to commander, and the compiled binary
 * (which takes that path) prints what the source CLI (commander, main.ts) prints.
 */
import { describe, expect, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { usageTable } from "../../build/usage-table.ts";
import { readRunArgv } from "../../src/cli/run-argv.ts";
import { usageError } from "../../src/cli/usage-error.ts";
import { removeAfterAllTests } from "../cleanup.ts";
import { compiledBinary, REPO, runBinary } from "../harness-binary.ts";
import { mulberry32 } from "../fixtures/seeded-random.ts";

/** What commander gives `run`'s action for `argv`, or the message it refuses it with. */
async function viaCommander(argv: string[]): Promise<unknown> {
  const { buildProgram } = await import("../../src/main.ts");
  const program = buildProgram(() => {}, "run");
  program.configureOutput({ writeOut: () => {}, writeErr: () => {}, outputError: () => {} });
  let got: unknown = "no action";
  program.commands.find((c) => c.name() === "run")!.action((prompt: string | undefined, opts: unknown) => {
    got = { prompt, opts };
  });
  try {
    await program.parseAsync(argv, { from: "user" });
  } catch (e) {
    return `refused: ${(e as Error).message}`;
  }
  return got;
}

/** Invocations the reader must take. */
const TAKEN: string[][] = [
  ["run", "hi"],
  ["run"],
  ["run", "-"],
  ["run", "hi", "--headless"],
  ["run", "--headless", "hi"],
  ["run", "hi", "--headless", "--data-dir", "/tmp/d", "--workspace", "/tmp/w"],
  ["run", "--output-format", "json", "hi"],
  ["run", "hi", "--output-format", "stream-json", "--output-format", "text"],
  ["run", "hi", "--mode", "smart", "--sandbox", "read-only", "--provider", "openai", "--model", "gpt-x"],
  ["run", "hi", "--config", "./airlock.yaml", "--recipe", "r.yaml"],
  ["run", "--model", "a b", "two words prompt"],
  ["run", "hi", "--headless", "--headless"],
  ["run", "", "--mode", "chat"],
];

/** Invocations left to commander (other forms, or refusals commander words). */
const LEFT: string[][] = [
  ["run", "a", "b"],
  ["run", "hi", "--mode", "nope"],
  ["run", "hi", "--mode"],
  ["run", "hi", "--workspace", "  "],
  ["run", "hi", "--workspace", "-x"],
  ["run", "hi", "--param", "a=1"],
  ["run", "hi", "--mode=smart"],
  ["run", "hi", "-h"],
  ["run", "hi", "--help"],
  ["run", "hi", "--unknown"],
  ["run", "--", "hi"],
  ["run", "hi", "-V"],
  ["serve"],
  ["sessions", "list"],
];

describe("airlock run's arguments without commander", () => {
  test("each plain invocation reads as commander reads it; the other forms are left to commander", async () => {
    const table = await usageTable();
    const diffs: string[] = [];
    for (const argv of TAKEN) {
      const read = readRunArgv(argv, table);
      const commander = await viaCommander(argv);
      if (read === undefined) diffs.push(`${JSON.stringify(argv)}: not taken (commander: ${JSON.stringify(commander)})`);
      else if (JSON.stringify(read) !== JSON.stringify(commander) || !Bun.deepEquals(read, commander, true)) {
        diffs.push(`${JSON.stringify(argv)}: ${JSON.stringify(read)} ≠ commander ${JSON.stringify(commander)}`);
      }
    }
    for (const argv of LEFT) {
      const read = readRunArgv(argv, table);
      if (read !== undefined) diffs.push(`${JSON.stringify(argv)}: taken as ${JSON.stringify(read)}`);
    }
    expect(diffs).toEqual([]);
  }, 120_000);

  test("the compiled binary prints what the source CLI prints for runs that end before their turn", async () => {
    const bin = await compiledBinary();
    const dir = mkdtempSync(join(tmpdir(), "airlock-run-argv-"));
    removeAfterAllTests(dir);
    writeFileSync(join(dir, "dup.yaml"), "mode: smart\nmode: chat\n");
    writeFileSync(join(dir, "bad.yaml"), "provider:\n  name: openai\nlimits:\n  max_concurrent_calls: eight\n");
    const cases: string[][] = [
      ["run", "hi", "--data-dir", join(dir, "data")],
      ["run", "hi", "--data-dir", join(dir, "data"), "--output-format", "json"],
      ["run", "hi", "--data-dir", join(dir, "data"), "--config", join(dir, "dup.yaml")],
      ["run", "hi", "--data-dir", join(dir, "data"), "--config", join(dir, "bad.yaml"), "--output-format", "stream-json"],
      ["run", "hi", "--data-dir", join(dir, "data"), "--config", join(dir, "missing.yaml")],
      ["run", "--data-dir", join(dir, "data"), "--headless"],
      ["run", "hi", "--data-dir", join(dir, "data"), "--workspace", join(dir, "no-such-folder"), "--provider", "openai", "--model", "m"],
    ];
    const diffs: string[] = [];
    // the duration of a result object differs between two runs
    const norm = (r: { code: number; stdout: string; stderr: string }) => ({ ...r, stdout: r.stdout.replace(/"duration_ms":\d+/g, '"duration_ms":0') });
    for (const args of cases) {
      expect(readRunArgv(args, await usageTable())).toBeDefined();
      const b = norm(await runBinary(bin, args));
      const proc = Bun.spawn([process.execPath, join(REPO, "src", "main.ts"), ...args], { cwd: REPO, stdin: "ignore", stdout: "pipe", stderr: "pipe", env: { PATH: "/usr/bin:/bin", HOME: dir } });
      const [code, stdout, stderr] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
      const s = norm({ code, stdout, stderr });
      if (JSON.stringify(b) !== JSON.stringify(s)) diffs.push(`${JSON.stringify(args)}: binary ${JSON.stringify(b).slice(0, 400)} ≠ source ${JSON.stringify(s).slice(0, 400)}`);
      expect(b.code).toBe(2);
    }
    expect(diffs).toEqual([]);
  }, 300_000);

  test("a differential fuzzer (fixed seed): every generated argv the start path decides (a usage error, or the options read) is what commander decides", async () => {
    const table = await usageTable();
    const r = mulberry32(20261202); // the same argvs on every run
    const pick = <T,>(a: readonly T[]): T => a[Math.floor(r() * a.length)]!;
    const options = table.program.commands.run!.options.flatMap((o) => (o.long ? [o.long] : []));
    expect(options.length).toBeGreaterThan(8);
    // every run option, their short and `=` forms, near misses, program options, help and the end of options
    const flags = [...options, "--headless", "--mode", "--sandbox", "--provider", "--output-format", "--mode=smart", "--headless=false", "--no-headless",
      "--Mode", "--mode ", "--mod", "--modes", "-m", "-h", "--help", "-V", "--version", "--", "-", "---", "--unknown", "-x", "--data_dir", "--config="];
    // choices of every option, wrong ones, empty and blank strings, values that look like options, Unicode, control characters
    const values = ["autonomous", "smart", "approve", "chat", "read-only", "workspace-write", "danger-full-access", "openai", "anthropic", "text", "json",
      "stream-json", "Smart", "smart ", " smart", "SMART", "", " ", "\t", "\u00a0", "\u3000", "-", "--", "-x", "--mode", "--headless", "x=1", "a=b=c", "=x",
      "./airlock.yaml", "/tmp/d", "~", "héllo", "😀", "\ud800", "a\nb", "\u0000", "help", "run", "constructor", "__proto__", "toString", "\u2014mode", "\u2212x", "\uff0d\uff0dmode"];
    const diffs: string[] = [];
    let taken = 0;
    let left = 0;
    let refused = 0;
    for (let c = 0; c < 1500; c++) {
      const argv = ["run"];
      const n = Math.floor(r() * 7);
      for (let i = 0; i < n; i++) {
        const k = r();
        if (k < 0.45) argv.push(pick(flags));
        else if (k < 0.65) argv.push(pick(flags), pick(values));
        else if (k < 0.75) argv.push(`${pick(flags)}=${pick(values)}`);
        else argv.push(pick(values));
      }
      if (r() < 0.3) argv.push(pick(["hi", "fix the test", "-p", "--", "", "run", "help"]));
      // as src/boot.ts: the usage errors the table decides first, then the reader; each must say what commander says
      const bad = usageError(argv, table);
      if (bad !== undefined) {
        refused++;
        const commander = await viaCommander(argv);
        const message = typeof commander === "string" ? commander.replace(/^refused: error: /, "") : undefined;
        if (message === undefined || !bad.stderr.includes(message)) diffs.push(`${JSON.stringify(argv)}: refused with ${JSON.stringify(bad.stderr)}; commander ${JSON.stringify(commander)}`);
        continue;
      }
      const read = readRunArgv(argv, table);
      if (read === undefined) {
        left++;
        continue;
      }
      taken++;
      const commander = await viaCommander(argv);
      if (JSON.stringify(read) !== JSON.stringify(commander) || !Bun.deepEquals(read, commander, true)) {
        diffs.push(`${JSON.stringify(argv)}: ${JSON.stringify(read)} ≠ commander ${JSON.stringify(commander)}`);
      }
    }
    expect(diffs).toEqual([]);
    expect({ taken: taken > 100, refused: refused > 100, left: left > 100 }).toEqual({ taken: true, refused: true, left: true });
  }, 120_000);
});
