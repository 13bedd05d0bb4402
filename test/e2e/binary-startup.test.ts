/**
 * @module test/e2e/binary-startup.test
 * The compiled binary's quick answers (src/boot.ts): `--version` and every help invocation print, with
 * stdout a pipe, exactly what the source CLI (`bun src/main.ts`) prints, from texts recorded at build
 * time (build/help-texts.ts); anything else still goes through commander with the same output.
 */
import { describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { helpInvocations, recordHelpTexts } from "../../build/help-texts.ts";
import { mayBeHelp, quickAnswer } from "../../src/boot.ts";
import { compiledBinary, REPO, runBinary } from "../harness-binary.ts";
import pkg from "../../package.json" with { type: "json" };

async function source(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const proc = Bun.spawn([process.execPath, join(REPO, "src", "main.ts"), ...args], { cwd: REPO, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  const [code, stdout, stderr] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  return { code, stdout, stderr };
}

/** Runs `fn` over `items`, `n` at a time. */
async function pool<T>(items: T[], n: number, fn: (x: T) => Promise<void>): Promise<void> {
  const todo = [...items];
  await Promise.all(Array.from({ length: n }, async () => {
    for (let x = todo.shift(); x !== undefined; x = todo.shift()) await fn(x);
  }));
}

describe("quick answers", () => {
  test("--version and -V are answered from package.json; other argv are left to main.ts", async () => {
    const never = async () => {
      throw new Error("the terminal check is for help texts only");
    };
    expect(await quickAnswer(["--version"], never)).toBe(`${pkg.version}\n`);
    expect(await quickAnswer(["-V"], never)).toBe(`${pkg.version}\n`);
    // from source there is no recorded help: commander answers
    expect(await quickAnswer(["--help"], async () => false)).toBeUndefined();
    expect(await quickAnswer(["--version", "x"], async () => false)).toBeUndefined();
    expect(await quickAnswer(["run", "--bogus"], async () => false)).toBeUndefined();
  });

  test("the recorded help covers --help, -h and help NAME of every command, with commander's exact text", async () => {
    const texts = await recordHelpTexts();
    const invocations = await helpInvocations();
    const names = invocations.filter((a) => a[0] === "help" && a.length === 2).map((a) => a[1]!);
    expect(names).toContain("run");
    for (const n of names) {
      expect(texts[`${n}\0--help`]).toBeString();
      expect(texts[`help\0${n}`]).toBe(texts[`${n}\0--help`]!);
    }
    expect(texts["sessions\0list\0-h"]).toBe((await source(["sessions", "list", "-h"])).stdout);
    expect(texts["--help"]).toContain("Usage: airlock [options] [command]");
    // boot.ts loads the texts only when mayBeHelp says an argv may be one of them
    expect(invocations.filter((a) => !mayBeHelp(a))).toEqual([]);
    expect(Object.keys(texts).map((k) => k.split("\0")).filter((a) => !mayBeHelp(a))).toEqual([]);
    expect(mayBeHelp(["run", "hi"])).toBe(false);
  }, 120_000);
});

describe("what every start of the binary reads", () => {
  test("src/boot.ts's module body has no await: it compiles as plain code, not as an async module (docs/performance.md, branch wip/cold)", async () => {
    // CommonJS has no top-level await: bundled alone (its imports left out) as CommonJS, boot.ts must build
    const r = await Bun.build({ entrypoints: [join(REPO, "src", "boot.ts")], format: "cjs", target: "bun", external: ["*"], throw: false });
    expect(r.logs.map(String)).toEqual([]);
    expect(r.success).toBe(true);
  });

  test("the help index is a module of its own, with no function per text: one switch to a text's number, one import() per text; each loader gives its text", async () => {
    const { cannedHelpModules } = await import("../../src/cli/canned-help.ts");
    const texts = { "--help": "top\n", "-h": "top\n", "run\0--help": "run's \"help\"\n" };
    const files = cannedHelpModules(texts);
    const index = files["canned-help-index.ts"]!;
    expect(Object.keys(files).sort()).toEqual(["canned-help-0.ts", "canned-help-1.ts", "canned-help-index.ts", "canned-help.ts"]);
    // what boot.ts's chunk holds: one import of the index, no key
    expect({ keys: files["canned-help.ts"]!.includes("--help"), imports: files["canned-help.ts"]!.split("import(").length - 1 }).toEqual({ keys: false, imports: 1 });
    expect({ async: index.includes("async"), arrows: index.split("=>").length - 1, imports: index.split("import(").length - 1 }).toEqual({ async: false, arrows: 2, imports: 2 });
    const dir = mkdtempSync(join(tmpdir(), "airlock-canned-help-"));
    try {
      for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
      const { cannedHelp } = (await import(join(dir, "canned-help.ts"))) as { cannedHelp: (key: string) => Promise<(() => Promise<string>) | undefined> };
      expect(await Promise.all(Object.keys(texts).map(async (k) => (await cannedHelp(k))!()))).toEqual(Object.values(texts));
      expect(await cannedHelp("nope")).toBeUndefined();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("the binary answers as the source CLI does", () => {
  test("every help invocation, --version and a few usage errors: same exit code, stdout and stderr", async () => {
    const bin = await compiledBinary();
    const cases = [...(await helpInvocations()), ["--version"], ["-V"], ["--bogus"], ["run", "--mode", "nope", "x"], ["sessions"], ["help", "nope"], ["run", "--output-format", "json", "--bogus"]];
    const diffs: string[] = [];
    await pool(cases, 3, async (args) => {
      const [b, s] = await Promise.all([runBinary(bin, args), source(args)]);
      if (JSON.stringify(b) !== JSON.stringify(s) && !(args.includes("json") && b.code === s.code && b.stderr === s.stderr)) {
        diffs.push(`${args.join(" ")}: binary ${JSON.stringify(b).slice(0, 300)} ≠ source ${JSON.stringify(s).slice(0, 300)}`);
      }
    });
    expect(diffs).toEqual([]);
  }, 300_000);
});

/** stdout and exit code of `argv` run on a pseudo-terminal `cols` columns wide (util-linux `script`), CRLF made LF. */
async function onTerminal(argv: string[], cols: number): Promise<{ code: number; stdout: string }> {
  const quoted = argv.map((a) => `'${a.replaceAll("'", "'\\''")}'`).join(" ");
  const proc = Bun.spawn(["script", "-qec", `stty cols ${cols} rows 40; exec ${quoted}`, "/dev/null"], { cwd: REPO, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  const [code, stdout] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  return { code, stdout: stdout.replaceAll("\r\n", "\n") };
}

describe("where help goes", () => {
  test("on a terminal the binary leaves help to commander, which wraps it to the terminal's width as the source CLI does", async () => {
    const bin = await compiledBinary();
    const [piped, b, s] = await Promise.all([runBinary(bin, ["--help"]), onTerminal([bin, "--help"], 50), onTerminal([process.execPath, join(REPO, "src", "main.ts"), "--help"], 50)]);
    expect(b.code).toBe(0);
    expect(b.stdout).toContain("Usage: airlock [options] [command]");
    expect(b.stdout).toBe(s.stdout);
    // the recorded text is wrapped at 80 columns: on this 50-column terminal it is not what is printed
    expect(piped.stdout).not.toBe(b.stdout);
  }, 120_000);

  test("help and an argument error to /dev/null or a closed descriptor: the same exit code, nothing on stderr", async () => {
    const bin = await compiledBinary();
    const sh = async (redirect: string, args: string): Promise<{ code: number; stderr: string }> => {
      const proc = Bun.spawn(["sh", "-c", `exec "$0" ${args} ${redirect}`, bin], { stdin: "ignore", stdout: "pipe", stderr: "pipe" });
      const [code, stderr] = await Promise.all([proc.exited, new Response(proc.stderr).text()]);
      return { code, stderr };
    };
    expect(await sh(">/dev/null", "--help")).toEqual({ code: 0, stderr: "" });
    expect(await sh(">&-", "--help")).toEqual({ code: 0, stderr: "" });
    expect(await sh(">&-", "--version")).toEqual({ code: 0, stderr: "" });
    expect((await sh("2>&-", "run --mode nope x")).code).toBe(2);
    const piped = await runBinary(bin, ["run", "--mode", "nope", "x"]);
    expect(piped.code).toBe(2);
    expect(piped.stderr).toContain("option '--mode <mode>' argument 'nope' is invalid.");
  }, 120_000);
});
