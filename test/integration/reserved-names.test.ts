/**
 * @module test/integration/reserved-names
 * An MCP server cannot pass for airlock's own tools (docs/spec.md §5): a server named `subagent`,
 * `developer` or `interpreter` (any case) is a configuration error at start (`config_invalid`, exit 2)
 * that names the server and the reserved names — through the real CLI, as root and as `nobody` — and
 * smart mode decides "read-only" by the tool's registry entry, never by its name's prefix.
 */
import { describe, expect, test } from "bun:test";
import { chmodSync, mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { stringify } from "yaml";
import { RESERVED_SERVER_NAMES } from "../../src/config/schema.ts";
import { modeVerdict } from "../../src/gate/inspectors/mode.ts";
import { subagentTools, type SubagentPort } from "../../src/tool/subagent.ts";
import { ToolRegistry } from "../../src/tool/registry.ts";
import { dataDirFor, sharedTempDir, testUsers, type TestUser } from "../as-user.ts";

const MAIN = path.join(import.meta.dir, "../../src/main.ts");

async function airlockRun(user: TestUser, data: string): Promise<{ code: number; stderr: string; stdout: string }> {
  const p = Bun.spawn([...user.prefix, process.execPath, MAIN, "run", "hello", "--headless", "--data-dir", data], {
    cwd: data,
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
    env: { ...process.env, AIRLOCK_HOME: "", HOME: data },
  });
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { code, stdout, stderr };
}

for (const user of testUsers()) {
  describe(`as ${user.name}: reserved MCP server names`, () => {
    test.each(["subagent", "developer", "interpreter", "Developer"])("an MCP server named %p is config_invalid at start, naming it and the reserved names", async (name) => {
      const data = path.join(sharedTempDir("airlock-names-"), "data");
      mkdirSync(data);
      chmodSync(data, 0o777);
      writeFileSync(path.join(data, "airlock.yaml"), stringify({ mode: "smart", mcp_servers: { [name]: { command: "node", args: ["server.js"] } } }));
      dataDirFor(data, user);
      const r = await airlockRun(user, data);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain("config_invalid");
      expect(r.stderr).toContain(`mcp_servers.${name}`);
      for (const reserved of RESERVED_SERVER_NAMES) expect(r.stderr).toContain(reserved);
    }, 60_000);
  });
}

describe("smart mode: read-only is the registry entry's, not the name's", () => {
  test("a tool named like a built-in but not read-only asks; a read-only one does not", () => {
    for (const name of ["subagent__spawn_shell", "code_execution__execute", "code_execution__list_tools"]) {
      expect(modeVerdict({ name, readOnly: false }, {}, "smart", {})).toMatchObject({ kind: "ask", inspector: "mode" });
      expect(modeVerdict({ name, readOnly: true }, {}, "smart", {})).toEqual({ kind: "allow", inspector: "mode" });
    }
  });
});

describe("the registry", () => {
  test("a tool source under a built-in tool's prefix is refused (config_invalid), whatever let it through", () => {
    const r = new ToolRegistry();
    for (const t of subagentTools({} as SubagentPort)) r.register(t);
    let err: unknown;
    try {
      r.registerSource({ prefix: "subagent__", list: async () => [] });
    } catch (e) {
      err = e;
    }
    expect(err).toMatchObject({ code: "config_invalid" });
    expect(String((err as Error).message)).toContain("subagent__spawn");
  });
});
