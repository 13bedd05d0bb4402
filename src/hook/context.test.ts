import { describe, expect, test } from "bun:test";
import { withHookContext, type HookContextNote } from "./context.ts";

const note: HookContextNote = { event: "PreToolUse", hook: "./h.sh", context: "use pnpm" };

describe("withHookContext: a hook's additionalContext travels with the outcome, marked as the hook's", () => {
  test("no notes: the outcome itself", () => {
    const o = { ok: true as const, result: { a: 1 } };
    expect(withHookContext(o, [])).toBe(o);
  });
  test("an object result gets hook_context; a string result gets marked lines; anything else is wrapped", () => {
    expect(withHookContext({ ok: true, result: { stdout: "x" } }, [note])).toEqual({ ok: true, result: { stdout: "x", hook_context: [note] } });
    expect(withHookContext({ ok: true, result: "text" }, [note])).toEqual({ ok: true, result: 'text\n\n[PreToolUse hook "./h.sh" adds context] use pnpm' });
    expect(withHookContext({ ok: true, result: [1, 2] }, [note])).toEqual({ ok: true, result: { result: [1, 2], hook_context: [note] } });
    expect(withHookContext({ ok: true, result: { hook_context: "mine" } }, [note])).toEqual({ ok: true, result: { result: { hook_context: "mine" }, hook_context: [note] } });
  });
  test("a refusal's error object gets hook_context, appended to notes already there", () => {
    const first = withHookContext({ ok: false, error: { code: "denied", message: "no" } }, [note]);
    expect(first).toEqual({ ok: false, error: { code: "denied", message: "no", hook_context: [note] } });
    const later = { ...note, event: "PostToolUse" as const };
    expect(withHookContext(first, [later])).toEqual({ ok: false, error: { code: "denied", message: "no", hook_context: [note, later] } });
  });
});
