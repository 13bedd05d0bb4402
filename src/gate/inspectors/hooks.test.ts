import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { matchingHooks, readHookAnswer } from "../../hook/index.ts";
import { readFileTool, writeFileTool } from "../../tool/files.ts";
import { shellTool } from "../../tool/shell.ts";
import { claudeToolInput, claudeToolName, interpretHookRun, preToolUseVerdict, rewriteMapper, runHook, runPreToolUseHooks, type PreToolUseInput as HookInput } from "./hooks.ts";

const FIX = path.resolve(import.meta.dir, "../../../test/fixtures/hooks");
const dir = mkdtempSync(path.join(os.tmpdir(), "airlock-hooks-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const input: HookInput = {
  hook_event_name: "PreToolUse",
  session_id: "ses_1",
  transcript_path: "/nonexistent/transcript.jsonl",
  cwd: dir,
  permission_mode: "default",
  tool_name: "Bash",
  tool_input: { command: "ls" },
  tool_use_id: "call_1",
  airlock_tool_name: "developer__shell",
  parent_session_id: null,
  ancestors: [],
};

/** Host pids of live (not zombie) processes whose cwd is `cwd`. */
function processesIn(cwd: string): number[] {
  return readdirSync("/proc")
    .map(Number)
    .filter((pid) => Number.isInteger(pid) && pid !== process.pid)
    .filter((pid) => {
      try {
        return readlinkSync(`/proc/${pid}/cwd`) === cwd && alive(pid);
      } catch {
        return false;
      }
    });
}

/** True while `pid` exists and is not a zombie (a killed orphan may wait for a reaper that never comes in a container). */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return false;
  }
}

describe("runHook", () => {
  test("exit 2 with empty stderr denies with a default reason", async () => {
    const v = await runHook(`${FIX}/exit2-silent.sh`, input, dir, 10);
    expect(v).toMatchObject({ kind: "deny", inspector: "hook", code: "denied" });
    expect((v as { reason: string }).reason).toContain("exit 2");
  });
  test("exit 2 uses stderr as the reason", async () => {
    expect(await runHook(`${FIX}/exit2-reason.sh`, input, dir, 10)).toMatchObject({ kind: "deny", reason: "no shell for you" });
  });
  test("a hook past its timeout is an ask (hook_timeout) and its whole process group is killed", async () => {
    const pidFile = path.join(dir, "bg.pid");
    // the background child must have started for the kill to be tested: on a busy machine the confined hook may not
    // get that far within a short timeout, so the timeout grows until it has (never a fixed wait)
    for (const timeoutS of [0.5, 2, 8, 30]) {
      const v = await runHook(`${FIX}/sleep-forever.sh ${pidFile}`, input, dir, timeoutS);
      expect(v).toMatchObject({ kind: "ask", code: "hook_timeout", inspector: "hook" });
      if (existsSync(pidFile) && readFileSync(pidFile, "utf8").trim() !== "") break;
    }
    // the background child started (its pid is one in the hook's own PID namespace, so it is not looked up here)
    expect(Number(readFileSync(pidFile, "utf8").trim())).toBeGreaterThan(0);
    // every process the hook started worked in `dir`: none may be left. Polling, no fixed sleep.
    for (let i = 0; i < 200 && processesIn(dir).length > 0; i++) await Bun.sleep(5);
    expect(processesIn(dir)).toEqual([]);
  });
  test("a hook that cannot start is an ask (hook_error)", async () => {
    expect(await runHook(`${FIX}/does-not-exist.sh`, input, dir, 10)).toMatchObject({ kind: "ask", code: "hook_error" });
    expect(await runHook(`${FIX}/allow.sh`, input, path.join(dir, "missing-cwd"), 10)).toMatchObject({ kind: "ask", code: "hook_error" });
  });
  test("a crash (exit 1) is an ask (hook_error) naming the hook", async () => {
    const v = await runHook(`${FIX}/crash.sh`, input, dir, 10);
    expect(v).toMatchObject({ kind: "ask", code: "hook_error", hook: `${FIX}/crash.sh` });
    expect((v as { reason: string }).reason).toContain("boom");
  });
  test("an unknown permissionDecision and non-JSON output are hook_output_invalid", async () => {
    expect(await runHook(`${FIX}/bad-decision.sh`, input, dir, 10)).toMatchObject({ kind: "ask", code: "hook_output_invalid" });
    expect(await runHook(`${FIX}/not-json.sh`, input, dir, 10)).toMatchObject({ kind: "ask", code: "hook_output_invalid" });
  });
  test("allow (which answers the mode's ask), ask, legacy block and silence (which answers nothing)", async () => {
    expect(await runHook(`${FIX}/allow.sh`, input, dir, 10)).toEqual({ kind: "allow", inspector: "hook", answersMode: true, hook: `${FIX}/allow.sh`, effects: { allowReason: "fine" } });
    expect(await runHook(`${FIX}/ask.sh`, input, dir, 10)).toMatchObject({ kind: "ask", reason: "hook wants a person", userProof: false });
    expect(await runHook(`${FIX}/legacy-block.sh`, input, dir, 10)).toMatchObject({ kind: "deny", reason: "legacy says no" });
    expect(await runHook(`${FIX}/silent.sh`, input, dir, 10)).toEqual({ kind: "allow", inspector: "hook" });
  });
  test("the hook gets the protocol JSON on stdin, the workspace as cwd and a sanitized environment", async () => {
    process.env.AIRLOCK_TEST_SECRET_TOKEN = "leak";
    const out = path.join(dir, "input.json");
    await runHook(`${FIX}/record-input.sh ${out}`, input, dir, 10);
    delete process.env.AIRLOCK_TEST_SECRET_TOKEN;
    expect(JSON.parse(readFileSync(out, "utf8"))).toEqual(input);
    expect(readFileSync(`${out}.cwd`, "utf8").trim()).toBe(dir);
    expect(readFileSync(`${out}.env`, "utf8")).not.toContain("AIRLOCK_TEST_SECRET_TOKEN");
  });
});

describe("interpretHookRun", () => {
  test("exit 2 blocks even when stdout says allow", () => {
    expect(interpretHookRun("h", 2, null, '{"hookSpecificOutput":{"permissionDecision":"allow"}}', "")).toMatchObject({ kind: "deny" });
  });
  test("a JSON array or a wrong hookEventName breaks the protocol", () => {
    expect(interpretHookRun("h", 0, null, "[]", "")).toMatchObject({ code: "hook_output_invalid" });
    expect(interpretHookRun("h", 0, null, '{"hookSpecificOutput":{"hookEventName":"PostToolUse"}}', "")).toMatchObject({ code: "hook_output_invalid" });
  });
  test("killed by a signal is hook_error", () => {
    expect(interpretHookRun("h", null, "SIGSEGV", "", "")).toMatchObject({ kind: "ask", code: "hook_error" });
    expect(interpretHookRun("h", 0, null, '{"decision":"approve"}', "")).toEqual({ kind: "allow", inspector: "hook", answersMode: true, hook: "h" });
    expect(interpretHookRun("h", 0, null, '{"reason":"fine"}', "")).toEqual({ kind: "allow", inspector: "hook" });
  });
});

describe("matchers and names", () => {
  test("a matcher is tested against both names, anchored", () => {
    const m = [{ matcher: "Bash", hooks: [{ type: "command" as const, command: "a", timeout: 60 }] }];
    expect(matchingHooks(m, ["Bash", "developer__shell"]).length).toBe(1);
    expect(matchingHooks(m, ["BashOutput", "x"]).length).toBe(0);
    const m2 = [{ matcher: "developer__.*", hooks: [{ type: "command" as const, command: "a", timeout: 60 }, { type: "command" as const, command: "a", timeout: 60 }] }];
    expect(matchingHooks(m2, ["Bash", "developer__shell"]).length).toBe(1); // identical handlers once
  });
  test("Claude Code names: alias, mcp__ for MCP servers, airlock's name for built-ins", () => {
    expect(claudeToolName({ name: "developer__shell", claude: { name: "Bash", input: () => ({}) } })).toBe("Bash");
    expect(claudeToolName({ name: "fs__read_text_file" })).toBe("mcp__fs__read_text_file");
    expect(claudeToolName({ name: "subagent__spawn" })).toBe("subagent__spawn");
    expect(claudeToolName({ name: "code_execution__execute" })).toBe("code_execution__execute");
  });
  test("a public script testing tool_name == Bash sees Bash", async () => {
    const matchers = [{ matcher: "", hooks: [{ type: "command" as const, command: `${FIX}/bash-only-deny.sh`, timeout: 10 }] }];
    const [v] = await runPreToolUseHooks(matchers, input, dir);
    expect(v).toMatchObject({ kind: "deny", reason: "Bash is blocked" });
  });
});

test("hooks get AIRLOCK_PROJECT_DIR and AIRLOCK_CONFIG_DIR, so a config can name its hooks by path", async () => {
  const cmd = `[ "$AIRLOCK_CONFIG_DIR" = /etc/airlock-cfg ] && [ "$AIRLOCK_PROJECT_DIR" = "$PWD" ] && exit 2; exit 0`;
  const matchers = [{ matcher: "", hooks: [{ type: "command" as const, command: cmd, timeout: 10 }] }];
  const [withEnv] = await runPreToolUseHooks(matchers, input, dir, undefined, { AIRLOCK_CONFIG_DIR: "/etc/airlock-cfg", AIRLOCK_PROJECT_DIR: dir });
  expect(withEnv).toMatchObject({ kind: "deny" });
  const [without] = await runPreToolUseHooks(matchers, input, dir);
  expect(without).toMatchObject({ kind: "allow" });
});

test("a hook's setsid child dies with the hook, and an answer printed before exit is read as the answer", async () => {
  const marker = `airlock_hook_child_${Math.random().toString(36).slice(2)}`;
  // the child leaves the hook's process group (setsid) but keeps its stdout open
  const cmd = `setsid bash -c 'exec -a ${marker} sleep 600' & sleep 0.3; printf '%s' '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"no"}}'`;
  const matchers = [{ matcher: "", hooks: [{ type: "command" as const, command: cmd, timeout: 5 }] }];
  const [v] = await runPreToolUseHooks(matchers, input, dir);
  expect(v).toMatchObject({ kind: "deny", reason: "no" });
  const left = () =>
    Bun.spawnSync(["pgrep", "-f", marker]).stdout.toString().trim().split("\n").filter(Boolean).map(Number).filter((pid) => alive(pid));
  for (let i = 0; i < 100 && left().length > 0; i++) await Bun.sleep(20);
  expect(left()).toEqual([]);
});

test("fixtures exist", () => expect(existsSync(`${FIX}/exit2-silent.sh`)).toBe(true));

describe("updatedInput (Claude Code's hooks reference, PreToolUse decision control)", () => {
  const ws = "/w";
  const answer = (updatedInput: Record<string, unknown>, decision?: "allow" | "ask" | "deny") =>
    `{"hookSpecificOutput":{"hookEventName":"PreToolUse",${decision ? `"permissionDecision":"${decision}",` : ""}"updatedInput":${JSON.stringify(updatedInput)}}}`;
  const verdict = (def: Parameters<typeof rewriteMapper>[0], args: Record<string, unknown>, out: string) =>
    preToolUseVerdict(readHookAnswer("PreToolUse", "h", { kind: "exited", code: 0, signal: null, stdout: out, stderr: "" }), rewriteMapper(def, claudeToolInput(def, args, ws), args, ws));

  test("Bash: command and timeout (ms) map back to command and timeout_s; the elevation fields hooks never see stay", () => {
    const v = verdict(shellTool, { command: "ls", sandbox_permissions: "danger-full-access", justification: "j" }, answer({ command: "ls -la", timeout: 5000 }, "allow"));
    expect(v).toMatchObject({ kind: "allow", answersMode: true, effects: { rewrite: { command: "ls -la", timeout_s: 5, sandbox_permissions: "danger-full-access", justification: "j" } } });
  });
  test("Read/Write/Edit: file_path maps back to path; ask and the rewrite go together", () => {
    expect(verdict(writeFileTool, { path: "a.txt", content: "x" }, answer({ file_path: "/w/b.txt", content: "y" }, "ask"))).toMatchObject({
      kind: "ask",
      effects: { rewrite: { path: "/w/b.txt", content: "y" } },
    });
  });
  test("an updatedInput equal to the input the hook was given is no rewrite", () => {
    expect(verdict(shellTool, { command: "ls" }, answer({ command: "ls" }, "allow"))).toEqual({ kind: "allow", inspector: "hook", answersMode: true, hook: "h" });
  });
  test("a field the tool has no argument for, input the schema refuses, or a tool with no inverse: hook_output_invalid, never dropped", () => {
    expect(verdict(readFileTool, { path: "a" }, answer({ file_path: "/w/b", offset: 10 }, "allow"))).toMatchObject({ kind: "ask", code: "hook_output_invalid", reason: expect.stringContaining('"offset"') });
    expect(verdict(shellTool, { command: "ls" }, answer({ command: 42 }, "allow"))).toMatchObject({ kind: "ask", code: "hook_output_invalid", reason: expect.stringContaining("command") });
    const noInverse = { ...shellTool, claude: { name: "Bash", input: shellTool.claude!.input } };
    expect(verdict(noInverse, { command: "ls" }, answer({ command: "pwd" }, "allow"))).toMatchObject({ kind: "ask", code: "hook_output_invalid", reason: expect.stringContaining("no mapping") });
    // without a tool to map to (interpretHookRun), a rewrite is refused too
    expect(interpretHookRun("h", 0, null, answer({ command: "pwd" }, "allow"), "")).toMatchObject({ kind: "ask", code: "hook_output_invalid" });
  });
  test("a deny wins over a rewrite; continue:false denies whatever the decision and carries the stop", () => {
    expect(verdict(shellTool, { command: "ls" }, answer({ command: "pwd" }, "deny"))).toMatchObject({ kind: "deny", code: "denied" });
    const stop = verdict(shellTool, { command: "ls" }, '{"continue":false,"stopReason":"frozen","hookSpecificOutput":{"permissionDecision":"allow","updatedInput":{"command":"pwd"}}}');
    expect(stop).toMatchObject({ kind: "deny", code: "denied", effects: { stop: "frozen" } });
    expect(stop.effects?.rewrite).toBeUndefined();
  });
  test("systemMessage, additionalContext and an allow's reason ride on the verdict", () => {
    const v = interpretHookRun("h", 0, null, '{"systemMessage":"to the person","hookSpecificOutput":{"permissionDecision":"allow","permissionDecisionReason":"why","additionalContext":"to the model"}}', "");
    expect(v).toMatchObject({ kind: "allow", effects: { systemMessage: "to the person", additionalContext: "to the model", allowReason: "why" } });
  });
});
