/**
 * @module test/security/sandbox-secrets
 * Adversarial review of the launcher (SPEC §9): what a sandboxed host process can read of airlock's
 * own secrets. The data dir holds `api-token`, `approver-token` (the user proof that a tool must never
 * hold) and `airlock.db` (every session's conversation, private ones included). Real runtime, real
 * bubblewrap, the real `developer__shell` and `interpreter__python` tools; the data dir lives outside
 * `/tmp` so the private `/tmp` does not hide it by accident.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { Config, type SandboxPolicyName } from "../../src/config/schema.ts";
import { createRuntime, type Runtime } from "../../src/runtime.ts";
import { makeSession } from "../fixtures/tool-context.ts";
import { shellTool } from "../../src/tool/shell.ts";
import type { ToolContext } from "../../src/tool/tool.ts";

let root: string;
let dataDir: string;
let outsideWs: string;
let rt: Runtime;

beforeAll(async () => {
  root = realpathSync(mkdtempSync("/var/tmp/airlock-sec-data-"));
  dataDir = path.join(root, "data");
  outsideWs = path.join(root, "ws");
  mkdirSync(dataDir);
  mkdirSync(outsideWs);
  writeFileSync(path.join(outsideWs, "README.md"), "hello");
  rt = await createRuntime({ config: Config.parse({}), configDir: dataDir, dataDir, env: {} });
});
afterAll(async () => {
  await rt.close();
  rmSync(root, { recursive: true, force: true });
});

function ctx(workspace: string, sandbox: SandboxPolicyName): ToolContext {
  return {
    session: makeSession({ workspace, sandbox }),
    turnId: "turn_sec",
    callId: "call_sec",
    fromScript: false,
    signal: new AbortController().signal,
    config: Config.parse({}),
    invoke: async () => ({ ok: false, error: { code: "unknown_tool", message: "not wired" } }),
    listTools: async () => [],
    policy: sandbox,
    dataDir: realpathSync(rt.dataDir),
  };
}

async function sh(command: string, workspace: string, sandbox: SandboxPolicyName) {
  return (await shellTool.execute(shellTool.schema.parse({ command }), ctx(workspace, sandbox))) as { exit_code: number; stdout: string; stderr: string };
}

describe("airlock's data dir is not visible to confined host processes", () => {
  for (const policy of ["read-only", "workspace-write"] as const) {
    test(`${policy}: the approver and API tokens cannot be read`, async () => {
      const r = await sh(`cat ${dataDir}/approver-token ${dataDir}/api-token; ls ${dataDir}`, outsideWs, policy);
      expect(r.stdout).not.toContain(rt.tokens.approverToken);
      expect(r.stdout).not.toContain(rt.tokens.apiToken);
      expect(r.stdout).not.toContain("airlock.db");
    });
    test(`${policy}: the database (every session's messages) cannot be read`, async () => {
      await rt.store.createSession({ workspace: outsideWs, mode: "smart", sandbox: policy, privacy: "private", headless: false, provider: "scripted", title: "needle-private-title-42" });
      const r = await sh(`cat ${dataDir}/airlock.db ${dataDir}/airlock.db-wal 2>/dev/null | grep -c needle-private-title-42 || true`, outsideWs, policy);
      expect(r.stdout.trim()).toBe("0");
    });
  }
  test("the workspace still works when it lives inside the data dir (and the tokens stay hidden)", async () => {
    const inner = path.join(dataDir, "workspace");
    mkdirSync(inner, { recursive: true });
    const r = await sh(`echo ok > made.txt && cat made.txt && cat ${dataDir}/approver-token`, inner, "workspace-write");
    expect(r.stdout).toContain("ok");
    expect(r.stdout).not.toContain(rt.tokens.approverToken);
  });
  test("a workspace that contains the data dir stays writable; the data dir inside it is hidden", async () => {
    const r = await sh(`echo ok > made2.txt && cat made2.txt && cat data/approver-token`, root, "workspace-write");
    expect(r.stdout).toContain("ok");
    expect(r.stdout).not.toContain(rt.tokens.approverToken);
  });
});
