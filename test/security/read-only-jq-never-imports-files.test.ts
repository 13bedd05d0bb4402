/**
 * @module test/security/read-only-jq-never-imports-files
 * `jq` is a known read-only command, but its program can read any file through `import … as $x` /
 * `include` with a `search` path: `jq -n 'import "config" as $c {search: "~/.docker"}; $c'` prints
 * ~/.docker/config.json while no word of the command names that file, so the security floor (which asks
 * before `cat ~/.docker/config.json` or `jq . ~/.docker/config.json`) sees nothing. Such a program is an
 * ordinary call: smart mode asks (refused headless) and the file is not printed.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stringify } from "yaml";
import { Config } from "../../src/config/schema.ts";
import { createRuntime } from "../../src/runtime.ts";
import { isKnownReadOnlyCommand } from "../../src/tool/read-only-commands.ts";

let top: string;
beforeAll(() => {
  top = realpathSync(mkdtempSync(join(tmpdir(), "airlock-jq-import-")));
});
afterAll(() => rmSync(top, { recursive: true, force: true }));

const IMPORT = `jq -n 'import "data" as $d {search: "./store"}; $d'`;

describe("a jq program that imports files is not read-only", () => {
  test("import and include make jq an ordinary call; a plain filter stays read-only", () => {
    expect(isKnownReadOnlyCommand(`jq -n 'import "config" as $c {search: "~/.docker"}; $c'`)).toBe(false);
    expect(isKnownReadOnlyCommand(`jq -n 'include "lib" {search: "/etc"}; 1'`)).toBe(false);
    expect(isKnownReadOnlyCommand("jq -r .name package.json")).toBe(true);
  });

  test("smart mode: the import asks (refused headless) and the imported file is never printed", async () => {
    const data = join(top, "data");
    const workspace = join(top, "ws");
    mkdirSync(data, { recursive: true });
    mkdirSync(join(workspace, "store"), { recursive: true });
    writeFileSync(join(workspace, "store", "data.json"), JSON.stringify({ token: "imported-secret" }));
    writeFileSync(join(data, "turns.yaml"), stringify({ turns: [{ tool_calls: [{ name: "developer__shell", arguments: { command: IMPORT } }] }, { text: "done" }] }));
    await using rt = await createRuntime({ config: Config.parse({ provider: { name: "scripted", script: "turns.yaml" }, mode: "smart" }), configDir: data, dataDir: data, workspace, env: {}, log: () => {} });
    const s = await rt.createSession({ headless: true });
    await rt.runTurn(s.id, "go");
    const tool = (await rt.store.listMessages(s.id)).find((m) => m.role === "tool")!;
    expect(JSON.parse(tool.content).error).toMatchObject({ code: "no_human_surface", inspector: "mode" });
    expect(tool.content).not.toContain("imported-secret");
  });
});
