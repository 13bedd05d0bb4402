/**
 * @module test/security/smart-mode-read-only-shell
 * Through the real runtime, HTTP and bubblewrap with the scripted provider, in `smart` mode: a known
 * read-only shell command (`ls`) runs without a card, a command that changes state (`rm`) raises the
 * mode's card, and a read-only command that reads a credential (`cat ~/.ssh/id_rsa`) still raises the
 * security floor's card — the read-only list removes only the mode's ask.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { harnessSse, startHarness, type Harness } from "../harness.ts";
import { decide } from "../integration/gate-helpers.ts";

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const shell = (command: string) => ({ name: "developer__shell", arguments: { command } });

/** A smart-mode session whose turn makes `calls` one per model step, then answers "done". */
async function smartTurn(calls: { name: string; arguments: Record<string, unknown> }[]) {
  const turns = `turns:\n${calls.map((c) => `  - tool_calls: [${JSON.stringify(c)}]\n`).join("")}  - text: "done"\n`;
  h = await startHarness({
    config: { provider: { name: "scripted", script: "turns.yaml" }, mode: "smart", sandbox: "workspace-write" },
    files: { "turns.yaml": turns },
    workspaceFiles: { "listed-file.txt": "x", "x.txt": "keep me" },
  });
  const s = await h.createSession({ mode: "smart", sandbox: "workspace-write" });
  const reply = await harnessSse(h, `/sessions/${s.id}/reply`, { method: "POST", json: { message: "go" } });
  return { id: s.id, reply };
}

describe("smart mode and known read-only shell commands", () => {
  test("ls runs without a card; rm raises the mode's card", async () => {
    const { id, reply } = await smartTurn([shell("ls"), shell("rm x.txt")]);
    const card = (await reply.waitFor((e) => e.event === "action_required")).data;
    expect(card).toMatchObject({ tool: "developer__shell", arguments: { command: "rm x.txt" }, inspector: "mode" });
    // the ls before it ran, with no card of its own
    const results = reply.events.filter((e) => e.event === "tool_result").map((e) => e.data);
    expect(results).toHaveLength(1);
    expect(results[0]).toMatchObject({ tool: "developer__shell", ok: true });
    expect(JSON.stringify(results[0].result)).toContain("listed-file.txt");
    expect(reply.events.filter((e) => e.event === "action_required")).toHaveLength(1);

    expect(await decide(h!, id, card.request_id, "deny")).toMatchObject({ status: 200 });
    const finished = (await reply.waitFor((e) => e.event === "turn_finished")).data;
    expect(finished.status).toBe("completed");
    expect(existsSync(join(h!.workspace, "x.txt"))).toBe(true);
  });

  test("cat of a workspace file runs without a card; cat ~/.ssh/id_rsa, read-only for the mode, still raises the security floor's card", async () => {
    const { id, reply } = await smartTurn([shell("cat listed-file.txt"), shell("cat ~/.ssh/id_rsa")]);
    const card = (await reply.waitFor((e) => e.event === "action_required")).data;
    expect(card).toMatchObject({ tool: "developer__shell", arguments: { command: "cat ~/.ssh/id_rsa" }, inspector: "sensitive_ops" });
    const results = reply.events.filter((e) => e.event === "tool_result").map((e) => e.data);
    expect(results.map((r) => [r.tool, r.ok])).toEqual([["developer__shell", true]]);
    expect(await decide(h!, id, card.request_id, "deny")).toMatchObject({ status: 200 });
    expect((await reply.waitFor((e) => e.event === "turn_finished")).data.status).toBe("completed");
  });
});
