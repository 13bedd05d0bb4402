/**
 * @module test/security/decision-log-names-what-answered
 * The decision log's `call_judged` row names the inspector that decided the call. When a hook's explicit
 * allow answered the mode's ask (no permission rule involved), that is the hook — not the security floor,
 * whose allow only means "no objection". Through the real runtime: smart mode, a PreToolUse hook that
 * answers `permissionDecision: "allow"`, a shell command that changes state; the row must say `hook`.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stringify } from "yaml";
import { Config } from "../../src/config/schema.ts";
import { createRuntime } from "../../src/runtime.ts";
import { decidingVerdict } from "../../src/gate/decision-log.ts";
import { combine, type Verdict } from "../../src/gate/verdict.ts";

const HOOKS = join(import.meta.dir, "..", "fixtures", "hooks");
let top: string;
beforeAll(() => {
  top = realpathSync(mkdtempSync(join(tmpdir(), "airlock-log-answer-")));
});
afterAll(() => rmSync(top, { recursive: true, force: true }));

describe("the decision log names what answered the mode's ask", () => {
  test("floor allow + hook allow + mode ask: the deciding verdict is the hook's", () => {
    const verdicts: Verdict[] = [
      { kind: "allow", inspector: "sensitive_ops" },
      { kind: "allow", inspector: "hook", answersMode: true },
      { kind: "ask", inspector: "mode", userProof: false, reason: "smart mode asks" },
    ];
    expect(decidingVerdict(combine(verdicts), verdicts)?.inspector).toBe("hook");
  });

  test("through the runtime: a call a hook's allow let run is logged with inspector hook", async () => {
    const data = join(top, "data");
    const workspace = join(top, "ws");
    mkdirSync(data, { recursive: true });
    mkdirSync(workspace, { recursive: true });
    writeFileSync(join(data, "turns.yaml"), stringify({ turns: [{ tool_calls: [{ name: "developer__shell", arguments: { command: "touch hooked.txt" } }] }, { text: "done" }] }));
    const config = Config.parse({
      provider: { name: "scripted", script: "turns.yaml" },
      mode: "smart",
      hooks: { PreToolUse: [{ matcher: "*", hooks: [{ type: "command", command: join(HOOKS, "allow.sh"), timeout: 10 }] }] },
    });
    await using rt = await createRuntime({ config, configDir: data, dataDir: data, workspace, env: {}, log: () => {} });
    const s = await rt.createSession({ headless: true });
    await rt.runTurn(s.id, "go");
    const tool = (await rt.store.listMessages(s.id)).find((m) => m.role === "tool");
    expect(JSON.parse(tool!.content).exit_code).toBe(0);
    // the row is buffered (Store.auditSoon): write it now
    await rt.store.flushAudit();
    const rows = await rt.store.listAudit({ kind: "call_judged" });
    expect(rows).toHaveLength(1);
    const detail = typeof rows[0]!.detail === "string" ? JSON.parse(rows[0]!.detail) : rows[0]!.detail;
    expect(rows[0]).toMatchObject({ decision: "allow" });
    expect(detail).toMatchObject({ tool: "developer__shell", ran: true, inspector: "hook" });
  });
});
