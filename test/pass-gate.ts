/**
 * @module test/pass-gate
 * TEST-ONLY stand-in for src/gate/gate.ts while it is being written: checks the calling context and
 * the in-flight registry, validates arguments, and runs every call (no inspectors, no cards).
 * Never used by the runtime's default wiring.
 */
import { AirlockError, toAirlockError } from "../src/errors.ts";
import { GateContext } from "../src/gate/context.ts";
import type { GateFull, RefusedCall } from "../src/agent/wiring.ts";
import type { GateWiringDeps } from "../src/runtime.ts";
import { isScriptableTool } from "../src/tool/registry.ts";
import type { ToolOutcome } from "../src/tool/tool.ts";

export function passThroughGate(deps: GateWiringDeps): GateFull {
  const refused = new Set<(r: RefusedCall) => void>();
  const gate: GateFull = {
    onRefused(l) {
      refused.add(l);
      return () => refused.delete(l);
    },
    async call(req): Promise<ToolOutcome> {
      const ctx = GateContext.use();
      const turn = deps.inflight.get(ctx.sessionId);
      if (!turn || turn.turnId !== ctx.turnId) return { ok: false, error: { code: "gate_no_session", message: "not in flight" } };
      const session = deps.store.requireSession(ctx.sessionId);
      deps.bus.publish(session.id, "tool_request", { session_id: session.id, call_id: req.callId, tool: req.name, arguments: req.args, from_script: req.fromScript });
      const def = await deps.registry.resolve(req.name);
      let outcome: ToolOutcome;
      if (!def) outcome = { ok: false, error: { code: "unknown_tool", message: `no tool ${req.name}` } };
      else {
        const parsed = def.schema.safeParse(req.args);
        if (!parsed.success) outcome = { ok: false, error: { code: "invalid_arguments", message: parsed.error.message } };
        else {
          try {
            const result = await def.execute(parsed.data, {
              session,
              turnId: ctx.turnId,
              callId: req.callId,
              fromScript: req.fromScript,
              signal: turn.controller.signal,
              config: deps.configFor(session) as never,
              invoke: (name, args) => gate.call({ name, args, callId: `${req.callId}.n`, fromScript: true, parentCallId: req.callId }),
              listTools: () => deps.registry.specsCached(isScriptableTool),
              runtime: deps.runtime,
            });
            outcome = { ok: true, result };
          } catch (e) {
            outcome = { ok: false, error: toAirlockError(e, "tool_failed").toJSON() };
          }
        }
      }
      if (!outcome.ok) void AirlockError;
      deps.bus.publish(session.id, "tool_result", { session_id: session.id, call_id: req.callId, tool: req.name, ok: outcome.ok, ...(outcome.ok ? { result: outcome.result } : { error: outcome.error }) });
      return outcome;
    },
  };
  return gate;
}
