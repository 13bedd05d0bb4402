import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, mkdirSync, rmSync, writeFileSync, chmodSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { HOOK_EVENTS, type HookEvent } from "../config/schema.ts";
import { matchQuery, readHookAnswer, runEventHooks, type HookInput } from "./index.ts";

const ok = (stdout: string, code: number | null = 0, stderr = "") => ({ kind: "exited" as const, code, signal: null, stdout, stderr });
const read = (event: HookEvent, stdout: string, code: number | null = 0, stderr = "") => readHookAnswer(event, "h", ok(stdout, code, stderr));

/**
 * Claude Code's output fields per event (its hooks reference: "Common JSON fields" and each event's
 * "decision control"): every event takes the common fields; the rest only where the reference names them.
 */
const FIELDS: Record<HookEvent, { block: boolean; context: boolean; permission: boolean }> = {
  PreToolUse: { block: true, context: true, permission: true },
  PostToolUse: { block: true, context: true, permission: false },
  UserPromptSubmit: { block: true, context: true, permission: false },
  Stop: { block: true, context: false, permission: false },
  SubagentStop: { block: true, context: false, permission: false },
  SessionStart: { block: false, context: true, permission: false },
  SessionEnd: { block: false, context: false, permission: false },
  Notification: { block: false, context: false, permission: false },
  PreCompact: { block: false, context: false, permission: false },
};

describe("readHookAnswer: Claude Code's output fields, per event", () => {
  test("the table covers every event airlock fires", () => expect(Object.keys(FIELDS).sort()).toEqual([...HOOK_EVENTS].sort()));
  for (const event of HOOK_EVENTS) {
    const f = FIELDS[event];
    test(`${event}: common fields are read`, () => {
      const a = read(event, JSON.stringify({ continue: false, stopReason: "enough", systemMessage: "look", suppressOutput: true }));
      expect(a.failure).toBeUndefined();
      expect(a).toMatchObject({ stop: { reason: "enough" }, systemMessage: "look", suppressOutput: true });
    });
    test(`${event}: decision block is ${f.block ? "read" : "refused"}`, () => {
      const a = read(event, JSON.stringify({ decision: "block", reason: "r" }));
      if (f.block) expect(a).toMatchObject({ decision: "block", reason: "r" });
      else expect(a.failure?.code).toBe("hook_output_invalid");
    });
    test(`${event}: additionalContext is ${f.context ? "read" : "refused"}`, () => {
      const a = read(event, JSON.stringify({ hookSpecificOutput: { hookEventName: event, additionalContext: "ctx" } }));
      if (f.context) expect(a.additionalContext).toBe("ctx");
      else expect(a.failure?.code).toBe("hook_output_invalid");
    });
    test(`${event}: permissionDecision is ${f.permission ? "read" : "refused"}`, () => {
      const a = read(event, JSON.stringify({ hookSpecificOutput: { hookEventName: event, permissionDecision: "deny", permissionDecisionReason: "no" } }));
      if (f.permission) expect(a).toMatchObject({ permissionDecision: "deny", permissionDecisionReason: "no" });
      else expect(a.failure?.code).toBe("hook_output_invalid");
    });
    test(`${event}: exit 2 blocks with stderr; exit 1 is hook_error; another event's hookEventName is refused`, () => {
      expect(read(event, '{"decision":"approve"}', 2, "why\n").blocked).toBe("why");
      expect(read(event, "", 1, "boom").failure).toMatchObject({ code: "hook_error" });
      const other = event === "Stop" ? "PreToolUse" : "Stop";
      expect(read(event, JSON.stringify({ hookSpecificOutput: { hookEventName: other } })).failure?.code).toBe("hook_output_invalid");
    });
  }
  test("plain text is context for UserPromptSubmit and SessionStart, ignored elsewhere, refused for PreToolUse", () => {
    expect(read("UserPromptSubmit", "today is Tuesday\n").text).toBe("today is Tuesday");
    expect(read("SessionStart", "branch main").text).toBe("branch main");
    expect(read("PostToolUse", "logged").text).toBeUndefined();
    expect(read("PostToolUse", "logged").failure).toBeUndefined();
    expect(read("PreToolUse", "allow").failure?.code).toBe("hook_output_invalid");
    expect(read("Stop", "{not json").failure?.code).toBe("hook_output_invalid");
  });
  test("a key given twice and updatedInput outside PreToolUse are refused", () => {
    expect(read("Stop", '{"decision":"block","decision":"block"}').failure?.code).toBe("hook_output_invalid");
    expect(read("PostToolUse", JSON.stringify({ hookSpecificOutput: { updatedInput: { a: 1 } } })).failure?.code).toBe("hook_output_invalid");
    expect(read("PreToolUse", JSON.stringify({ hookSpecificOutput: { updatedInput: { command: "ls" } } })).updatedInput).toEqual({ command: "ls" });
  });
});

const common = { session_id: "ses_1", transcript_path: "/t.jsonl", cwd: "/w", permission_mode: "default", parent_session_id: null, ancestors: [] };

test("matchers are tested against what Claude Code matches per event", () => {
  expect(matchQuery({ ...common, hook_event_name: "PostToolUse", tool_name: "Bash", tool_input: {}, tool_use_id: "c", tool_response: "", airlock_tool_name: "developer__shell" })).toEqual(["Bash", "developer__shell"]);
  expect(matchQuery({ ...common, hook_event_name: "Notification", message: "m", notification_type: "permission_prompt" })).toEqual(["permission_prompt"]);
  expect(matchQuery({ ...common, hook_event_name: "SessionStart", source: "resume" })).toEqual(["resume"]);
  expect(matchQuery({ ...common, hook_event_name: "PreCompact", trigger: "auto", custom_instructions: "" })).toEqual(["auto"]);
  expect(matchQuery({ ...common, hook_event_name: "Stop", stop_hook_active: false, last_assistant_message: "" })).toBeNull();
});

describe("runEventHooks", () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "airlock-hook-events-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  test("Claude Code's standard wiring \"$CLAUDE_PROJECT_DIR/.claude/hooks/x.sh\" runs the project's script, with the event on stdin", async () => {
    mkdirSync(path.join(dir, ".claude", "hooks"), { recursive: true });
    const script = path.join(dir, ".claude", "hooks", "block-rm.sh");
    writeFileSync(script, `#!/bin/sh\nin=$(cat)\ncase "$in" in *'"hook_event_name":"Stop"'*'"stop_hook_active":false'*) echo "not done yet: $AIRLOCK_PROJECT_DIR" >&2; exit 2;; esac\nexit 0\n`);
    chmodSync(script, 0o755);
    const matchers = [{ matcher: "", hooks: [{ type: "command" as const, command: '"$CLAUDE_PROJECT_DIR"/.claude/hooks/block-rm.sh', timeout: 10 }] }];
    const input: HookInput = { ...common, cwd: dir, hook_event_name: "Stop", stop_hook_active: false, last_assistant_message: "done" };
    const [a] = await runEventHooks(matchers, input, { workspace: dir });
    expect(a!.failure).toBeUndefined();
    expect(a!.blocked).toBe(`not done yet: ${dir}`);
    const [again] = await runEventHooks(matchers, { ...input, stop_hook_active: true }, { workspace: dir });
    expect(again!.blocked).toBeUndefined();
  });

  test("a matcher that does not match skips its group; a broken one is a failure, never skipped", async () => {
    const input: HookInput = { ...common, cwd: dir, hook_event_name: "SessionStart", source: "startup" };
    const g = (matcher: string) => ({ matcher, hooks: [{ type: "command" as const, command: `echo ${matcher.length}`, timeout: 10 }] });
    const answers = await runEventHooks([g("resume"), g("startup|clear"), g("(")], input, { workspace: dir });
    expect(answers.map((a) => a.hook)).toEqual(["echo 13", "echo 1"]);
    expect(answers[0]!.text).toBe("13");
    expect(answers[1]!.failure?.code).toBe("hook_error");
  });
});
