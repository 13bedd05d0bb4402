/**
 * The rest of a PreToolUse answer, through real sessions (scripted model, real gate, real hook processes;
 * Claude Code's hooks reference, "PreToolUse decision control" and "Common JSON fields"):
 * - `continue: false` with `stopReason`: the call is not run and the TURN stops (it ends `cancelled` with
 *   the reason), over an `allow` given with it; the person gets `hook_message` kind `stopped`; the model
 *   gets the reason as the call's result; the other calls of the same model turn (they run in parallel)
 *   still running are cancelled;
 * - `systemMessage` goes to the person (`hook_message` kind `system_message`), never into the conversation;
 * - `additionalContext` goes to the model with the call's result, or with its refusal, marked as a hook's.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import type { AnyEvent } from "../../src/bus/events.ts";
import { type Harness } from "../harness.ts";
import { startGateHarness } from "./gate-helpers.ts";

const PUB = resolve(import.meta.dir, "../fixtures/hooks/public-style");
let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const hooks = (command: string) => ({ PreToolUse: [{ matcher: "Bash", hooks: [{ type: "command", command, timeout: 30 }] }] });
const shell = (command: string) => ({ name: "developer__shell", arguments: { command } });

function collect(h: Harness, sessionId: string): AnyEvent[] {
  const events: AnyEvent[] = [];
  h.rt.bus.subscribe(sessionId, (e) => events.push(e));
  return events;
}

describe("continue: false", () => {
  test("the call is not run, the turn stops with the hook's stopReason, the person is told, and the model gets the reason as the result", async () => {
    const hook = join(PUB, "stop-on-deploy.sh");
    h = await startGateHarness({
      config: { provider: { name: "scripted", script: "turns.yaml" }, mode: "autonomous", hooks: hooks(hook) },
      files: {
        "turns.yaml": `turns:\n  - tool_calls: ${JSON.stringify([shell("echo deploy > deployed.txt"), shell("sleep 60; echo next > next.txt")])}\n  - text: "never reached"\n`,
      },
    });
    const s = await h.createSession({ mode: "autonomous" });
    const events = collect(h, s.id);
    const r = await h.rt.runTurn(s.id, "go");
    expect(r).toMatchObject({ status: "cancelled", answer: null, error: { code: "cancelled" } });
    expect(r.error!.message).toContain('hook "' + hook + '" stopped the turn (continue: false): deploys are frozen until Monday');
    expect(r.iterations).toBe(1);
    expect(existsSync(join(h.workspace, "deployed.txt"))).toBe(false);
    expect(existsSync(join(h.workspace, "next.txt"))).toBe(false);

    const said = events.filter((e) => e.type === "hook_message").map((e) => e.data);
    expect(said).toEqual([{ session_id: s.id, turn_id: r.turn_id, event: "PreToolUse", hook, kind: "stopped", message: "deploys are frozen until Monday" }]);
    const finished = events.find((e) => e.type === "turn_finished")!.data;
    expect(finished.status).toBe("cancelled");
    expect(finished.error?.message).toContain("deploys are frozen until Monday");

    const [stopped, next] = (await h.rt.store.listMessages(s.id)).filter((m) => m.role === "tool");
    expect(JSON.parse(stopped!.content)).toMatchObject({ error: { code: "denied", inspector: "hook", message: expect.stringContaining("deploys are frozen until Monday") } });
    expect(JSON.parse(next!.content)).toMatchObject({ error: { code: "cancelled" } });
    expect((await h.rt.store.listMessages(s.id)).some((m) => m.role === "assistant" && m.content === "never reached")).toBe(false);
  }, 60_000);
});

describe("systemMessage and additionalContext", () => {
  test("systemMessage reaches the person only; additionalContext reaches the model with the result, and with a refusal, marked as the hook's", async () => {
    const hook = join(PUB, "notes-for-both.sh");
    h = await startGateHarness({
      config: { provider: { name: "scripted", script: "turns.yaml" }, mode: "autonomous", hooks: hooks(hook) },
      files: { "turns.yaml": `turns:\n  - tool_calls: ${JSON.stringify([shell("echo hi")])}\n  - text: "done"\n` },
    });
    const note = { event: "PreToolUse", hook, context: "This repository uses pnpm, not npm." };

    const s = await h.createSession({ mode: "autonomous" });
    const events = collect(h, s.id);
    expect(await h.rt.runTurn(s.id, "go")).toMatchObject({ status: "completed", answer: "done" });
    expect(events.filter((e) => e.type === "hook_message").map((e) => e.data)).toEqual([
      { session_id: s.id, turn_id: expect.any(String), event: "PreToolUse", hook, kind: "system_message", message: "audit: this Bash call was logged" },
    ]);
    const messages = await h.rt.store.listMessages(s.id);
    const ran = JSON.parse(messages.find((m) => m.role === "tool")!.content);
    expect(ran.stdout).toContain("hi");
    expect(ran.hook_context).toEqual([note]);
    expect(messages.some((m) => m.content.includes("audit: this Bash call was logged"))).toBe(false);

    // the same call refused (approve mode asks, and nobody can answer a headless session): the note rides on the refusal
    const headless = await h.createSession({ mode: "approve", headless: true });
    expect(await h.rt.runTurn(headless.id, "go")).toMatchObject({ status: "completed" });
    const refused = JSON.parse((await h.rt.store.listMessages(headless.id)).find((m) => m.role === "tool")!.content);
    expect(refused.error).toMatchObject({ code: "no_human_surface", hook_context: [note] });
  }, 60_000);
});
