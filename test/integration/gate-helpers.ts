/**
 * @module test/integration/gate-helpers
 * Shared pieces of the gate's full-stack tests: the default runtime (with the real Gate) and a
 * test tool `testscript__run` that makes nested calls through `ctx.invoke` — the same door a script's
 * `tools.*` uses — and can keep a call alive past its turn (a QuickJS script cannot: its context is
 * disposed when it ends), to show such a late call is refused `gate_no_session`.
 */
import { z } from "zod";
import { defineTool, type ToolOutcome } from "../../src/tool/tool.ts";
import { startHarness, type Harness, type HarnessOptions } from "../harness.ts";

/** Calls kept alive by a "script" after its turn, run later by the test. */
export const lingering: (() => Promise<ToolOutcome>)[] = [];

export const scriptTool = defineTool({
  name: "testscript__run",
  description: "Runs tool calls through the gate like a script's tools.* door.",
  schema: z.object({ calls: z.array(z.object({ name: z.string(), arguments: z.unknown() })).default([]), keep_alive: z.boolean().optional() }),
  readOnly: true,
  usesPermit: false,
  scriptable: false,
  async execute(args, ctx) {
    const out: ToolOutcome[] = [];
    for (const c of args.calls) out.push(await ctx.invoke(c.name, c.arguments));
    if (args.keep_alive) lingering.push(() => ctx.invoke("developer__list_dir", { path: "." }));
    return out;
  },
});

/** Starts a harness (the runtime's default wiring: the real gate) plus the test script tool. */
export async function startGateHarness(o: HarnessOptions): Promise<Harness> {
  const h = await startHarness(o);
  if (!h.rt.registry.get(scriptTool.name)) h.rt.registry.register(scriptTool);
  return h;
}

/** POSTs a decision from `sessionId`; returns status and JSON body. */
export async function decide(h: Harness, sessionId: string, requestId: string, decision: "allow_once" | "deny", approver?: string) {
  const headers: Record<string, string> = {};
  if (approver) headers["X-Airlock-Approver"] = approver;
  const res = await h.api(`/sessions/${sessionId}/actions/${requestId}`, { method: "POST", json: { decision }, headers });
  return { status: res.status, body: (await res.json()) as any };
}
