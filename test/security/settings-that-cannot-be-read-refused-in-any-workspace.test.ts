/**
 * @module test/security/settings-that-cannot-be-read-refused-in-any-workspace
 * With `hooks.import_claude_settings: true`, a workspace's `.claude/settings.json` (or `settings.local.json`) that
 * cannot be read as a regular file — the model's link to `/proc/version` or `/proc/kmsg`, a FIFO, a folder — was refused
 * (`config_invalid`) only in a trusted folder: in an untrusted one the run completed with the warning "its hooks are
 * NOT run … If you trust it, run: airlock trust DIR", which claimed the file held hooks (airlock could not read it) and
 * steered the person to trust the folder. docs/spec.md: such a file is `config_invalid` for an untrusted workspace too.
 * Also: that warning was printed twice on stderr per run (the tree's hooks are imported again for the SessionEnd hooks
 * at the run's close, after its run overrides are cleared); it is printed once, with a recipe's run overrides too. A
 * settings file of an untrusted workspace that is not JSON is `config_invalid` as well (the one reader, as for a trusted
 * one and for `permissions.import_claude_settings`). Real runs: `bun src/main.ts run`, the
 * scripted provider, HOME and the data dir in a temp folder.
 */
import { describe, expect, test } from "bun:test";
import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { airlockWith, settingsHooksBase, type Ran } from "../settings-hooks-cli.ts";


const { base, home, dataDir } = settingsHooksBase("airlock-settings-unreadable-");
const data = dataDir("data");

interface RunResult {
  status: string;
  error: { code: string; message: string } | null;
  warnings?: string[];
}

const airlock = (args: string[]): Promise<Ran> => airlockWith(home, data, args);

async function runIn(ws: string): Promise<{ code: number; result: RunResult; stderr: string }> {
  const r = await airlock(["run", "go", "--headless", "--output-format", "json", "--workspace", ws]);
  return { code: r.code, result: JSON.parse(r.stdout) as RunResult, stderr: r.stderr };
}

type Kind = "link to /proc/version" | "link to /proc/kmsg" | "FIFO" | "folder";

/** A workspace whose `.claude/<name>` is `kind`; trusted when asked. */
async function workspace(label: string, name: string, kind: Kind, trusted: boolean): Promise<{ ws: string; file: string }> {
  const ws = join(base, label);
  mkdirSync(join(ws, ".claude"), { recursive: true });
  const file = join(ws, ".claude", name);
  switch (kind) {
    case "link to /proc/version":
      symlinkSync("/proc/version", file);
      break;
    case "link to /proc/kmsg":
      symlinkSync("/proc/kmsg", file);
      break;
    case "FIFO":
      expect(Bun.spawnSync(["mkfifo", file]).exitCode).toBe(0);
      break;
    case "folder":
      mkdirSync(file);
      break;
  }
  if (trusted) expect((await airlock(["trust", ws])).code).toBe(0);
  return { ws, file };
}

/** The run is refused at start: config_invalid naming the file, why in words, and the fix; no "trust it" advice. */
function expectRefused(r: { code: number; result: RunResult; stderr: string }, file: string, why: string): void {
  expect({ code: r.code, status: r.result.status, error: r.result.error?.code }).toEqual({ code: 2, status: "invalid", error: "config_invalid" });
  const message = r.result.error!.message;
  expect(message).toStartWith(`${file}: cannot be read for hooks.import_claude_settings: `);
  expect(message).toContain(why);
  expect(message).toContain("remove or fix that file, or set hooks.import_claude_settings: false");
  expect(message).not.toContain("ENOTREG");
  expect(message).not.toContain("EISDIR");
  expect(r.stderr).toContain(`airlock: config_invalid: ${message}`);
  expect(r.stderr).not.toContain("NOT run");
  expect(r.stderr).not.toContain("airlock trust");
}

describe("a settings file that cannot be read as a regular file", () => {
  const cases: [Kind, string, string][] = [
    ["link to /proc/version", "settings.json", "is a kernel pseudo file (/proc/version), not a regular file"],
    ["link to /proc/kmsg", "settings.json", "is a kernel pseudo file (/proc/kmsg), not a regular file"],
    ["FIFO", "settings.local.json", "is not a regular file"],
    ["folder", "settings.json", "is not a regular file"],
  ];
  for (const [kind, name, why] of cases) {
    test(`untrusted workspace, .claude/${name} a ${kind}: config_invalid, not "its hooks are NOT run"`, async () => {
      const { ws, file } = await workspace(`untrusted-${kind.replace(/\W+/g, "-")}`, name, kind, false);
      expectRefused(await runIn(ws), file, why);
    }, 60_000);
  }

  test("trusted workspace, .claude/settings.json a FIFO: config_invalid with the same words", async () => {
    const { ws, file } = await workspace("trusted-fifo", "settings.json", "FIFO", true);
    expectRefused(await runIn(ws), file, "is not a regular file");
  }, 60_000);

  test("trusted workspace, .claude/settings.json a link to /proc/version: config_invalid with the same words", async () => {
    const { ws, file } = await workspace("trusted-proc", "settings.json", "link to /proc/version", true);
    expectRefused(await runIn(ws), file, "is a kernel pseudo file (/proc/version), not a regular file");
  }, 60_000);

  test("untrusted workspace, .claude/settings.json not JSON: config_invalid as in a trusted one, not \"its hooks are NOT run\"", async () => {
    const ws = join(base, "untrusted-not-json");
    mkdirSync(join(ws, ".claude"), { recursive: true });
    const file = join(ws, ".claude", "settings.json");
    writeFileSync(file, "{ hooks: ");
    const r = await runIn(ws);
    expect({ code: r.code, status: r.result.status, error: r.result.error?.code }).toEqual({ code: 2, status: "invalid", error: "config_invalid" });
    expect(r.result.error!.message).toBe(`${file}: not JSON; fix it or set hooks.import_claude_settings: false`);
    expect(r.stderr).not.toContain("NOT run");
  }, 60_000);

  test("no settings files (an empty .claude folder): the run completes without a warning", async () => {
    const ws = join(base, "no-files");
    mkdirSync(join(ws, ".claude"), { recursive: true });
    const r = await runIn(ws);
    expect({ code: r.code, status: r.result.status, warnings: r.result.warnings }).toEqual({ code: 0, status: "completed", warnings: undefined });
    expect(r.stderr).not.toContain("WARNING");
  }, 60_000);
});

for (const withRecipe of [false, true]) {
  test(`an untrusted workspace's hooks not run: the warning is printed once on stderr, and once in the result${withRecipe ? " (a recipe: run overrides)" : ""}`, async () => {
    const ws = join(base, `hooks-untrusted${withRecipe ? "-recipe" : ""}`);
    mkdirSync(join(ws, ".claude"), { recursive: true });
    const file = join(ws, ".claude", "settings.json");
    writeFileSync(file, JSON.stringify({ hooks: { PreToolUse: [{ matcher: "Bash", hooks: [{ type: "command", command: "true" }] }] } }));
    let r: { code: number; result: RunResult; stderr: string };
    if (withRecipe) {
      const recipe = join(base, "recipe.yaml");
      writeFileSync(recipe, `name: go\ninstructions: go\nmode: autonomous\nprovider: { name: scripted, script: ${join(data, "turns.yaml")} }\n`);
      const ran = await airlock(["run", "--recipe", recipe, "--headless", "--output-format", "json", "--workspace", ws]);
      r = { code: ran.code, result: JSON.parse(ran.stdout) as RunResult, stderr: ran.stderr };
    } else {
      r = await runIn(ws);
    }
    expect({ code: r.code, status: r.result.status }).toEqual({ code: 0, status: "completed" });
    expect(r.result.warnings).toEqual([expect.stringContaining(`${file}: its hooks are NOT run`)]);
    const printed = r.stderr.split("\n").filter((l) => l.includes("its hooks are NOT run"));
    expect(printed).toEqual([`airlock: WARNING: ${r.result.warnings![0]}`]);
  }, 60_000);
}
