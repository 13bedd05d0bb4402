/**
 * @module test/e2e/usage-errors.test
 * The compiled binary answers argument errors from its usage table (src/cli/usage-error.ts, read from the
 * commander program at build time by build/usage-table.ts) without loading commander: for many bad
 * invocations of every command, what the table decides is commander's very stderr and exit code (the
 * source CLI, `bun src/main.ts`, is the reference), what it leaves to commander is left, and the binary
 * prints the same as the source CLI either way. Unknown options and commands (with commander's "(Did you
 * mean …?)") are fuzzed over near misses and compared byte for byte with main.ts's program run in process.
 */
import { describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { usageTable } from "../../build/usage-table.ts";
import { BEFORE_COMMANDER, suggestion, usageError, type UsageCommand, type UsageTable } from "../../src/cli/usage-error.ts";
import { compiledBinary, REPO, runBinary } from "../harness-binary.ts";
import { mulberry32 } from "../fixtures/seeded-random.ts";

/** The source CLI's answers, each spawned once for both tests (a source start costs ~0.3 s of CPU). */
const sourceRuns = new Map<string, Promise<{ code: number; stdout: string; stderr: string }>>();
function source(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const key = JSON.stringify(args);
  let run = sourceRuns.get(key);
  if (run === undefined) sourceRuns.set(key, (run = spawnSource(args)));
  return run;
}

/**
 * The invocations compared against a real commander run: every third decidable one (in the table's
 * order, so every command and option kind is still met) and all those left to commander. The table's
 * decide/leave split itself is checked for every case, in process.
 */
function compared(cases: string[][]): string[][] {
  return [...cases.filter((_, i) => i % 3 === 0), ...LEFT];
}

async function spawnSource(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const proc = Bun.spawn([process.execPath, join(REPO, "src", "main.ts"), ...args], { cwd: REPO, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  const [code, stdout, stderr] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  return { code, stdout, stderr };
}

/** Runs `fn` over `items`, `n` at a time. */
async function pool<T>(items: T[], n: number, fn: (x: T) => Promise<void>): Promise<void> {
  const todo = [...items];
  await Promise.all(
    Array.from({ length: n }, async () => {
      for (let x = todo.shift(); x !== undefined; x = todo.shift()) await fn(x);
    }),
  );
}

/** Every leaf command with its path. */
function leaves(cmd: UsageCommand, path: string[] = []): { path: string[]; cmd: UsageCommand }[] {
  const subs = Object.entries(cmd.commands);
  if (subs.length === 0) return path.length ? [{ path, cmd }] : [];
  return subs.flatMap(([name, sub]) => leaves(sub, [...path, name]));
}

/** Bad invocations the table must decide: a value refused by choices or the non-empty check, an option missing its value. */
function decidable(table: UsageTable): string[][] {
  const out: string[][] = [];
  for (const { path, cmd } of leaves(table.program)) {
    for (const o of cmd.options) {
      // `run --output-format …` is left to main.ts (it prints a result object on stdout as well)
      if (o.value !== "required" || !o.long || o.long === "--output-format") continue;
      out.push([...path, o.long]); // argument missing
      if (o.check.kind === "choices") {
        out.push([...path, o.long, "nope"], [...path, `${o.long}=nope`], [...path, "x", o.long, "--nope"], [...path, o.long, "it's \"odd\""]);
      }
      if (o.check.kind === "nonEmpty") out.push([...path, o.long, ""], [...path, `${o.long}=  `]);
    }
  }
  // after valid options and operands
  out.push(
    ["run", "a prompt", "--headless", "--mode", "smart", "--sandbox", "nope"],
    ["run", "--model", "m", "--provider", "openai", "--mode", "Smart", "x"],
    ["run", "--data-dir", "/tmp/x", "--mode"],
    ["policy", "explain", "--mode", "nope"], // before the mandatory --tool is checked
    ["actions", "answer", "act_1", "--session", ""], // before the missing decision
    ["run", "x", "y", "--sandbox", "nope"], // before too many arguments
    // an unknown option is reported only once every option is read: an invalid value after it comes first
    ["run", "--bogus", "--mode", "nope"],
    ["run", "--headless=yes", "--mode", "nope"], // a flag given a value is an unknown option
    ["bogus", "--mode", "nope"], // an unknown command, before the options after it
  );
  return out;
}

/** Invocations the table must leave to commander (valid ones, or errors it does not model). */
const LEFT = [
  ["run", "--mode", "nope", "--output-format", "json"],
  ["run", "--output-format=json", "--mode"],
  ["run", "--", "--mode", "nope"],
  ["run", "-h", "--mode", "nope"],
  ["run", "x", "-V", "--mode", "nope"],
  ["run", "--param", "=bad", "--mode", "nope"],
  ["run", "--mode", "smart", "x", "y"],
  ["bogus", "--help"],
  ["frobnicate", "-V"],
  ["run", "--bogus", "-h"],
  ["audit", "--bogus"], // conflicting options: commander checks them before unknown ones
  ["sessions", "--json", "lsit"],
  ["sessions", "--json", "list"],
  ["help", "run"],
  ["policy", "explain"],
  ["serve", "--port", "99999"],
  ["run", "--mode", "smart", "--help"],
  // the program's -V/--version is read wherever it stands, even as another option's value: commander prints the version
  ["run", "--mode", "--version"],
  ["run", "--mode", "nope", "-V"],
  ["run", "hi", "--model", "-V"],
  ["run", "--mode", "nope", "-Vx"],
  ["serve", "--role", "--version"],
  ["sessions", "show", "--data-dir", "", "-V"],
];

describe("argument errors without commander", () => {
  test("what the table decides is commander's exact stderr and exit code; the rest is left to commander", async () => {
    const table = await usageTable();
    const cases = decidable(table);
    expect(cases.length).toBeGreaterThan(40);
    const diffs: string[] = [];
    for (const args of [...cases, ...LEFT]) {
      const decided = usageError(args, table);
      const mustDecide = !LEFT.includes(args);
      if (mustDecide !== (decided !== undefined)) diffs.push(`${JSON.stringify(args)}: ${mustDecide ? "not decided" : `decided: ${JSON.stringify(decided)}`}`);
    }
    await pool(compared(cases), 3, async (args) => {
      const decided = usageError(args, table);
      if (!decided) return;
      const s = await source(args);
      if (s.stdout !== "" || s.stderr !== decided.stderr || s.code !== decided.exitCode) {
        diffs.push(`${JSON.stringify(args)}: table ${JSON.stringify(decided)} ≠ commander ${JSON.stringify(s)}`);
      }
    });
    expect(diffs).toEqual([]);
  }, 300_000);

  test("the compiled binary prints what the source CLI prints for each of them", async () => {
    const bin = await compiledBinary();
    const cases = compared(decidable(await usageTable()));
    const diffs: string[] = [];
    await pool(cases, 3, async (args) => {
      const [b, s] = await Promise.all([runBinary(bin, args), source(args)]);
      // a usage error of `run --output-format json` prints a result object whose duration differs
      const same = JSON.stringify(b) === JSON.stringify(s) || (args.some((a) => a.includes("json")) && b.code === s.code && b.stderr === s.stderr);
      if (!same) diffs.push(`${JSON.stringify(args)}: binary ${JSON.stringify(b).slice(0, 300)} ≠ source ${JSON.stringify(s).slice(0, 300)}`);
    });
    expect(diffs).toEqual([]);
  }, 600_000);

  test("a differential fuzzer (fixed seed) over every command: each usage error the table decides is one commander gives", async () => {
    const table = await usageTable();
    const { buildProgram } = await import("../../src/main.ts");
    const { Command } = await import("commander");
    /** commander's verdict on `argv` with every action replaced: "ran", or the message it refuses (or exits) with */
    const viaCommander = async (argv: string[]): Promise<string> => {
      const program = buildProgram(() => {});
      program.configureOutput({ writeOut: () => {}, writeErr: () => {}, outputError: () => {} });
      const stub = (c: InstanceType<typeof Command>): void => {
        if (c.commands.length === 0) c.action(() => {});
        c.commands.forEach(stub);
      };
      program.commands.forEach(stub);
      try {
        await program.parseAsync(argv, { from: "user" });
        return "ran";
      } catch (e) {
        return (e as Error).message;
      }
    };
    const r = mulberry32(7); // the same argvs on every run
    const pick = <T,>(a: readonly T[]): T => a[Math.floor(r() * a.length)]!;
    const all = leaves(table.program);
    const values = ["", " ", "nope", "all", "api", "smart", "jsonl", "0", "-1", "-1.5", "1e3", "99999", "x=1", "-", "--", "-V", "--version", "-h", "--help", "--json", "--url", "ses_1", "\u00a0", "é"];
    const diffs: string[] = [];
    let decided = 0;
    for (let c = 0; c < 4000; c++) {
      const { path, cmd } = pick(all);
      const flags = [...cmd.options.flatMap((o) => [o.long, o.short].filter((x): x is string => x !== null)), "--bogus", "-V", "--version", "-h", "--"];
      const argv = [...path];
      const n = Math.floor(r() * 5);
      for (let i = 0; i < n; i++) {
        const k = r();
        if (k < 0.4) argv.push(pick(flags));
        else if (k < 0.7) argv.push(pick(flags), pick(values));
        else if (k < 0.8) argv.push(`${pick(flags)}=${pick(values)}`);
        else argv.push(pick(values));
      }
      const bad = usageError(argv, table);
      if (bad === undefined) continue;
      decided++;
      const commander = await viaCommander(argv);
      if (!bad.stderr.includes(commander.replace(/^error: /, ""))) diffs.push(`${JSON.stringify(argv)}: table ${JSON.stringify(bad.stderr)} ≠ commander ${JSON.stringify(commander)}`);
    }
    expect(diffs).toEqual([]);
    expect(decided).toBeGreaterThan(200);
  }, 120_000);
});

/** `word` changed once by `r`: one edit, a transposition, a case change, a prefix, a longer word, Unicode, or several edits. */
function nearMiss(word: string, r: () => number): string {
  const at = Math.floor(r() * word.length);
  const letters = "abcdefghijklmnopqrstuvwxyz-éÉßİ\u00a0\u0301日🙂";
  const letter = [...letters][Math.floor(r() * [...letters].length)]!;
  const k = Math.floor(r() * 10);
  switch (k) {
    case 0:
      return word.slice(0, at) + letter + word.slice(at + 1); // substitution
    case 1:
      return word.slice(0, at) + letter + word.slice(at); // insertion
    case 2:
      return word.slice(0, at) + word.slice(at + 1); // deletion
    case 3:
      return at + 1 < word.length ? word.slice(0, at) + word[at + 1] + word[at] + word.slice(at + 2) : word + word; // transposition
    case 4:
      return r() < 0.5 ? word.toUpperCase() : word.slice(0, at) + word.slice(at).toUpperCase(); // case
    case 5:
      return word.slice(0, Math.max(1, at)); // a prefix
    case 6:
      return word + word.slice(0, 1 + Math.floor(r() * 4)); // a longer word
    case 7:
      return nearMiss(nearMiss(word, r), r); // two or more edits
    case 8:
      return word.normalize("NFD") + "\u0301"; // combining accent
    default:
      return ["x", "zz", "frobnicate", "", "ñ", "🙂", "lsit", "sesions"][Math.floor(r() * 8)]!;
  }
}

describe("unknown options and commands without commander", () => {
  test("a differential fuzzer (fixed seed) over near misses: wherever the table decides, stderr and exit code are commander's, byte for byte", async () => {
    const table = await usageTable();
    const { buildProgram } = await import("../../src/main.ts");
    const { exitCodeFor } = await import("../../src/errors.ts");
    const { Command, CommanderError } = await import("commander");
    /** main.ts's stderr and exit code for `argv`, in process: the program as main.ts builds it, every action replaced, stderr captured */
    const viaCommander = async (argv: string[]): Promise<{ stderr: string; exitCode: number }> => {
      let stderr = "";
      const program = buildProgram(() => {});
      const quiet = (c: InstanceType<typeof Command>): void => {
        // each command holds its own output settings: main.ts's outputError stays, only the writes are captured
        c.configureOutput({ writeOut: () => {}, writeErr: (str) => void (stderr += str) });
        if (c.commands.length === 0) c.action(() => {});
        c.commands.forEach(quiet);
      };
      quiet(program);
      try {
        await program.parseAsync(argv, { from: "user" });
        return { stderr, exitCode: 0 };
      } catch (e) {
        // as main.ts: a commander error of exit code 0 (help, version) is 0; any other is a usage error
        if (!(e instanceof CommanderError)) throw e;
        return { stderr, exitCode: e.exitCode === 0 ? 0 : exitCodeFor("usage") };
      }
    };
    const r = mulberry32(20); // the same argvs on every run
    const pick = <T,>(a: readonly T[]): T => a[Math.floor(r() * a.length)]!;
    /** every command with subcommands, with its path */
    const parents: { path: string[]; cmd: UsageCommand }[] = [];
    const walk = (cmd: UsageCommand, path: string[]): void => {
      if (Object.keys(cmd.commands).length > 0) parents.push({ path, cmd });
      for (const [name, sub] of Object.entries(cmd.commands)) walk(sub, [...path, name]);
    };
    walk(table.program, []);
    const all = leaves(table.program);
    const tails = ["x", "--bogus", "-V", "--help", "-h", "--", "--mode", "nope", "-1", "--data-dir", "/tmp/x", "é"];
    const values = ["", "x", "smart", "nope", "=", "é"];
    const diffs: string[] = [];
    let decided = 0;
    let commands = 0;
    let one = 0;
    let several = 0;
    for (let c = 0; c < 3000; c++) {
      let argv: string[];
      if (r() < 0.35) {
        // an unknown command: a near miss of a visible command name (or alias) of a command with subcommands
        const { path, cmd } = pick(parents);
        const names = cmd.suggest?.commands ?? Object.keys(cmd.commands);
        argv = [...path, nearMiss(pick(names), r)];
      } else {
        // an unknown option: a near miss of a long option of the leaf or an ancestor, among valid arguments
        const { path, cmd } = pick(all);
        const longs = cmd.suggest?.options ?? ["--bogus"];
        const miss = `--${nearMiss(pick(longs).slice(2), r)}`;
        const k = r();
        const bad = k < 0.6 ? miss : k < 0.8 ? `${miss}=${pick(values)}` : k < 0.9 ? `-${nearMiss(pick(longs).slice(2), r)}` : `-${pick([..."xyzqWV1h"])}`;
        argv = [...path];
        const known = cmd.options.filter((o) => o.long !== "--output-format");
        if (known.length > 0 && r() < 0.5) {
          const o = pick(known);
          argv.push(o.long ?? o.short!);
          if (o.value !== "none") argv.push(o.check.kind === "choices" ? pick(o.check.choices) : "v");
        }
        argv.push(bad);
      }
      const n = Math.floor(r() * 3);
      for (let i = 0; i < n; i++) argv.push(pick(tails));
      const bad = usageError(argv, table);
      if (bad === undefined) continue;
      decided++;
      if (bad.stderr.includes("unknown command")) commands++;
      if (bad.stderr.includes("(Did you mean one of")) several++;
      else if (bad.stderr.includes("(Did you mean")) one++;
      const commander = await viaCommander(argv);
      if (commander.stderr !== bad.stderr || commander.exitCode !== bad.exitCode) diffs.push(`${JSON.stringify(argv)}: table ${JSON.stringify(bad)} ≠ commander ${JSON.stringify(commander)}`);
    }
    expect(diffs).toEqual([]);
    // the fuzzer reaches every kind: unknown commands and options, one suggestion and several
    expect({ decided: decided > 1000, commands: commands > 200, one: one > 200, several: several > 5 }).toEqual({ decided: true, commands: true, one: true, several: true });
  }, 300_000);

  test("an argv main.ts answers before commander (the hidden __script-exec) is never decided as an unknown command", async () => {
    const table = await usageTable();
    expect(Object.hasOwn(table.program.commands, BEFORE_COMMANDER)).toBe(false); // not a commander command: the fuzzers cannot reach it
    for (const argv of [[BEFORE_COMMANDER], [BEFORE_COMMANDER, "--bogus"], [BEFORE_COMMANDER, "x", "-h"]]) expect(usageError(argv, table)).toBeUndefined();
    expect(usageError(["__script-exe"], table)?.stderr).toContain("unknown command '__script-exe'"); // a near miss is still an error
  });

  test("suggestion agrees with commander's suggestSimilar on candidate lists the CLI does not have (case, hyphens, Unicode, ties)", async () => {
    // commander's own function (not exported from its index), loaded by path
    const { suggestSimilar } = (await import(join(REPO, "node_modules", "commander", "lib", "suggestSimilar.js"))) as { suggestSimilar: (word: string, candidates: string[]) => string };
    const r = mulberry32(21);
    const pick = <T,>(a: readonly T[]): T => a[Math.floor(r() * a.length)]!;
    const base = ["list", "List", "lint", "last", "a-b", "ab", "a_b", "Zeta", "zeta", "éclair", "eclair", "Éclair", "x", "mode", "Mode", "node", "model", "日本", "🙂ok"];
    const diffs: string[] = [];
    let suggested = 0;
    let several = 0;
    for (let c = 0; c < 3000; c++) {
      const options = r() < 0.5;
      const candidates = Array.from({ length: 1 + Math.floor(r() * 8) }, () => pick(base)).map((x) => (options ? `--${x}` : x));
      const word = `${options ? "--" : ""}${nearMiss(pick(base), r)}`;
      const ours = suggestion(word, candidates);
      if (ours !== "") suggested++;
      if (ours.includes("one of")) several++;
      const theirs = suggestSimilar(word, candidates);
      if (ours !== theirs) diffs.push(`${JSON.stringify(word)} in ${JSON.stringify(candidates)}: ${JSON.stringify(ours)} ≠ ${JSON.stringify(theirs)}`);
    }
    expect(diffs).toEqual([]);
    expect({ suggested: suggested > 500, several: several > 50 }).toEqual({ suggested: true, several: true });
  });

  test("the compiled binary prints what the source CLI prints for unknown options and commands", async () => {
    const bin = await compiledBinary();
    const table = await usageTable();
    const cases = [
      ["run", "--bogus", "x"],
      ["run", "--mod", "smart", "x"],
      ["run", "--MODE=smart"],
      ["frobnicate"],
      ["sesions"],
      ["sessions", "lsit"],
      ["sessions", "list", "--jsno"],
      ["serve", "--prot", "7420"],
      ["run", "x", "-q"],
      ["policy", "explian"],
      ["run", "--bogus", "--mode", "nope"], // the invalid value is found first
    ];
    const diffs: string[] = [];
    for (const args of cases) if (usageError(args, table) === undefined) diffs.push(`${JSON.stringify(args)}: not decided by the table`);
    await pool(cases, 3, async (args) => {
      const [b, s] = await Promise.all([runBinary(bin, args), source(args)]);
      if (JSON.stringify(b) !== JSON.stringify(s) || s.code === 0) diffs.push(`${JSON.stringify(args)}: binary ${JSON.stringify(b)} ≠ source ${JSON.stringify(s)}`);
    });
    expect(diffs).toEqual([]);
  }, 300_000);
});

describe("the binary's table, cut to one command", () => {
  test("each command's text is a string literal with no quote and no backslash, kept so by the minifier; a table holding the stand-in is refused", async () => {
    const { cannedUsageModule, QUOTE_STAND_IN } = await import("../../src/cli/canned-usage.ts");
    const table = await usageTable();
    const text = cannedUsageModule(table);
    const parts = JSON.parse(text.split("\n").find((l) => l.startsWith("const PARTS = "))!.slice("const PARTS = ".length, -1)) as Record<string, string>;
    expect(Object.keys(parts).sort()).toEqual(Object.keys(table.program.commands).sort());
    // no escape to read (JavaScriptCore's fast path for a string literal), whatever quote the minifier picks...
    expect(Object.entries(parts).filter(([, t]) => t.includes('"') || t.includes("\\")).map(([name]) => name)).toEqual([]);
    // ...and it picks the plain double quote: each text stands in the minified module as is
    const dir = mkdtempSync(join(tmpdir(), "airlock-canned-usage-min-"));
    try {
      writeFileSync(join(dir, "canned-usage.js"), text);
      const out = await Bun.build({ entrypoints: [join(dir, "canned-usage.js")], minify: true, target: "bun", format: "esm" });
      const minified = await out.outputs[0]!.text();
      expect(Object.entries(parts).filter(([, t]) => !minified.includes(`"${t}"`)).map(([name]) => name)).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    const run = table.program.commands.run!;
    const holding: UsageTable = { ...table, program: { ...table.program, commands: { ...table.program.commands, run: { ...run, hint: `see ${QUOTE_STAND_IN}airlock run --help${QUOTE_STAND_IN}` } } } };
    expect(() => cannedUsageModule(holding)).toThrow(/stands for a quote/);
  }, 120_000);

  test("for every argv, usageError and readRunArgv answer from cannedUsageFor(argv[0]) as from the whole table", async () => {
    const { cannedUsageModule } = await import("../../src/cli/canned-usage.ts");
    const { readRunArgv } = await import("../../src/cli/run-argv.ts");
    const table = await usageTable();
    const dir = mkdtempSync(join(tmpdir(), "airlock-canned-usage-"));
    try {
      const file = join(dir, "canned-usage.js");
      writeFileSync(file, cannedUsageModule(table));
      const { cannedUsageFor } = (await import(file)) as { cannedUsageFor: (first: string | undefined) => UsageTable };
      let state = 11;
      const r = () => {
        state = (state * 1103515245 + 12345) & 0x7fffffff;
        return state / 0x80000000;
      };
      const pick = <T,>(a: readonly T[]): T => a[Math.floor(r() * a.length)]!;
      const all = leaves(table.program);
      const firsts = ["nope", "__proto__", "constructor", "--version", "-h", "help", "", ...Object.keys(table.program.commands)];
      const words = ["--mode", "nope", "smart", "--data-dir", "--bogus", "-V", "--", "x", "--mode=", "--output-format", "json", " "];
      const diffs: string[] = [];
      let decided = 0;
      for (let c = 0; c < 3000; c++) {
        const argv = r() < 0.7 ? [...pick(all).path] : [pick(firsts)];
        if (r() < 0.1) argv.length = 0;
        const n = Math.floor(r() * 5);
        for (let i = 0; i < n; i++) argv.push(pick(words));
        const whole = usageError(argv, table);
        const cut = usageError(argv, cannedUsageFor(argv[0]));
        if (whole !== undefined) decided++;
        if (JSON.stringify(cut) !== JSON.stringify(whole)) diffs.push(`usageError ${JSON.stringify(argv)}`);
        if (JSON.stringify(readRunArgv(argv, cannedUsageFor(argv[0]))) !== JSON.stringify(readRunArgv(argv, table))) diffs.push(`readRunArgv ${JSON.stringify(argv)}`);
      }
      expect(diffs).toEqual([]);
      expect(decided).toBeGreaterThan(50);
      // a cut table is a new object: one caller's edits do not reach the next
      expect(cannedUsageFor("run")).not.toBe(cannedUsageFor("run"));
      expect(Object.keys(cannedUsageFor("nope").program.commands)).toEqual([]);
      expect(Object.keys(cannedUsageFor("run").program.commands)).toEqual(["run"]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
