/**
 * A notify command that hangs never holds up the gate: the card is parked, visible and answerable while
 * the command runs, the turn completes, and at its timeout the command is killed with its whole process
 * group (a background child included) and counted as failed — never an allow. The command gets the
 * event's JSON on stdin and the sanitized environment (no secret-named variable of airlock's).
 */
import { afterEach, describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { harnessSse, startHarness, type Harness } from "../harness.ts";
import { processesWith, waitFor } from "../processes.ts";
import { decide } from "../integration/gate-helpers.ts";

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
  delete process.env.AIRLOCK_NOTIFY_PROBE_TOKEN;
});

const TURNS = `
turns:
  - tool_calls: [{ name: developer__write_file, arguments: { path: "out.txt", content: "written" } }]
  - text: "done"
`;

describe("a notify command never holds a card", () => {
  test("a hanging command: the card is parked and answered, the turn completes, then the command's process group is killed at its timeout and counted", async () => {
    // unique sleep lengths mark the command's processes in /proc (the foreground and a background child)
    const fg = `${86_000 + (process.pid % 1000)}.25`;
    const bg = `${86_000 + (process.pid % 1000)}.75`;
    process.env.AIRLOCK_NOTIFY_PROBE_TOKEN = "must-not-reach-the-command";
    const command = `cat > "$AIRLOCK_CONFIG_DIR/stdin.json"; env > "$AIRLOCK_CONFIG_DIR/env.txt"; sleep ${bg} & echo started > "$AIRLOCK_CONFIG_DIR/started"; sleep ${fg}`;
    h = await startHarness({
      config: { provider: { name: "scripted", script: "turns.yaml" }, mode: "smart", notify: { notifiers: [{ name: "hangs", on: ["card_parked"], command, timeout_s: 5 }] } },
      files: { "turns.yaml": TURNS },
    });
    const root = await h.createSession({ mode: "smart" });
    const reply = await harnessSse(h, `/sessions/${root.id}/reply`, { method: "POST", json: { message: "go" } });
    const card = (await reply.waitFor((e) => e.event === "action_required")).data;
    await waitFor(() => existsSync(join(h!.dataDir, "started")), "the notify command to start");
    expect(processesWith(fg).length).toBeGreaterThan(0);
    expect(processesWith(bg).length).toBeGreaterThan(0);

    // the card is listed and answerable while the command hangs; the call runs and the turn completes
    const listed = (await (await h.api(`/sessions/${root.id}/actions`)).json()) as any;
    expect(listed.actions.map((c: any) => c.request_id)).toEqual([card.request_id]);
    expect((await decide(h, root.id, card.request_id, "allow_once")).status).toBe(200);
    const fin = await reply.waitFor((e) => e.event === "turn_finished");
    expect(fin.data).toMatchObject({ status: "completed", answer: "done" });
    expect(readFileSync(join(h.workspace, "out.txt"), "utf8")).toBe("written");
    // the command was still running when the turn ended: nothing waited for it
    expect(h.rt.notify.stats().notifiers).toEqual([{ name: "hangs", sent: 0, failed: 0 }]);

    await h.rt.notify.idle();
    expect(h.rt.notify.stats().notifiers).toEqual([{ name: "hangs", sent: 0, failed: 1 }]);
    await waitFor(() => processesWith(fg).length === 0 && processesWith(bg).length === 0, "the command's processes to be gone");

    const stdin = JSON.parse(readFileSync(join(h.dataDir, "stdin.json"), "utf8"));
    expect(stdin).toMatchObject({ event: "card_parked", request_id: card.request_id, tool: "developer__write_file", chain_label: "root" });
    expect(stdin.arguments).toBeUndefined();
    const env = readFileSync(join(h.dataDir, "env.txt"), "utf8");
    expect(env).toContain("AIRLOCK_NOTIFY_EVENT=card_parked");
    expect(env).not.toContain("AIRLOCK_NOTIFY_PROBE_TOKEN");
  });

  test("a command that fails is logged and counted, and the card's call still waits for a person (never an allow)", async () => {
    h = await startHarness({
      config: { provider: { name: "scripted", script: "turns.yaml" }, mode: "smart", notify: { notifiers: [{ name: "fails", on: ["card_parked"], command: "echo cannot reach the phone >&2; exit 7" }] } },
      files: { "turns.yaml": TURNS },
    });
    const root = await h.createSession({ mode: "smart" });
    const reply = await harnessSse(h, `/sessions/${root.id}/reply`, { method: "POST", json: { message: "go" } });
    const card = (await reply.waitFor((e) => e.event === "action_required")).data;
    await h.rt.notify.idle();
    expect(h.rt.notify.stats().failed).toBe(1);
    // still pending: a failed notification decides nothing
    expect(existsSync(join(h.workspace, "out.txt"))).toBe(false);
    const listed = (await (await h.api(`/sessions/${root.id}/actions`)).json()) as any;
    expect(listed.actions.map((c: any) => c.request_id)).toEqual([card.request_id]);
    expect((await decide(h, root.id, card.request_id, "deny")).status).toBe(200);
    expect((await reply.waitFor((e) => e.event === "turn_finished")).data.status).toBe("completed");
    expect(existsSync(join(h.workspace, "out.txt"))).toBe(false);
  });
});
