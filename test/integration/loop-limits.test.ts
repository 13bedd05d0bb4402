/**
 * Turn bounds through the real runtime: cancel while a host tool runs stops the tool and ends the
 * turn as cancelled (history stays valid for the next turn); `limits.max_iterations` fails a turn
 * that never answers.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { harnessSse, startHarness, type Harness } from "../harness.ts";

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe("loop bounds", () => {
  test("cancel during a running shell call ends the call and the turn; the next turn starts cleanly", async () => {
    h = await startHarness({
      config: { provider: { name: "scripted", script: "turns.yaml" }, mode: "autonomous", sandbox: "danger-full-access" },
      files: {
        "turns.yaml": `
turns:
  - tool_calls:
      - name: developer__shell
        arguments: { command: "sleep 60" }
      - name: developer__list_dir
        arguments: { path: "." }
  - text: "after cancel"
`,
      },
    });
    const s = await h.createSession();
    const reply = await harnessSse(h, `/sessions/${s.id}/reply`, { method: "POST", json: { message: "sleep" } });
    await reply.waitFor((e) => e.event === "tool_request" && e.data.tool === "developer__shell");
    const t0 = Date.now();
    expect(h.rt.cancel(s.id)).toBe(true);
    const fin = await reply.waitFor((e) => e.event === "turn_finished");
    expect(fin.data.status).toBe("cancelled");
    expect(Date.now() - t0).toBeLessThan(30_000); // generous bound: the 60 s sleep did not run out
    const result = reply.events.find((e) => e.event === "tool_result" && e.data.tool === "developer__shell")!;
    expect(result.data.ok).toBe(false);
    expect(h.rt.inflight.has(s.id)).toBe(false);
    // both calls of the cancelled assistant message have a tool result (the second ran beside the first: parallel calls)
    const msgs = await h.rt.store.listMessages(s.id);
    const tools = msgs.filter((m) => m.role === "tool");
    expect(tools.map((m) => m.name)).toEqual(["developer__shell", "developer__list_dir"]);
    expect(tools[0]!.is_error).toBe(true);
    expect(JSON.parse(tools[0]!.content).error.code).toBe("cancelled");
    const r2 = await h.rt.runTurn(s.id, "again");
    expect(r2).toMatchObject({ status: "completed", answer: "after cancel" });
  });

  test("a turn that keeps calling tools fails with max_iterations", async () => {
    const turns = Array.from({ length: 5 }, () => `  - tool_calls: [{ name: developer__list_dir, arguments: { path: "." } }]`).join("\n");
    h = await startHarness({
      config: { provider: { name: "scripted", script: "turns.yaml" }, mode: "autonomous", limits: { max_iterations: 3 } },
      files: { "turns.yaml": `turns:\n${turns}\n` },
    });
    const s = await h.createSession();
    const r = await h.rt.runTurn(s.id, "loop");
    expect(r.status).toBe("failed");
    expect(r.error!.code).toBe("max_iterations");
    expect(r.iterations).toBe(3);
    expect(r.tool_calls).toBe(3);
    expect((await h.rt.store.listTurns(s.id))[0]!.status).toBe("failed");
  });
});
