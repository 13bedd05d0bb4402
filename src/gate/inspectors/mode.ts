/**
 * @module gate/inspectors/mode
 * The session's mode (SPEC §3) combined with per-tool config (`config.tools[name].permission`):
 * `chat` refuses every call (`mode_chat`); otherwise a configured per-tool permission is this
 * inspector's verdict for that tool (it is more specific than the mode); else `autonomous` allows,
 * `smart` asks for calls that change state, `approve` asks for every call but an `inert` one
 * (`code_execution__list_tools`). Script and subagent tools count as read-only: their inner calls are judged one by one.
 * Decided by the tool's registry entry (`readOnly`, `inert`), never by its name.
 */
import type { Mode, ToolPermissions } from "../../config/schema.ts";
import type { ToolDef } from "../../tool/tool.ts";
import type { DenyVerdict, Verdict } from "../verdict.ts";
import { toolConfigVerdict } from "./tool-config.ts";
import { assertNever } from "../../errors.ts";

/**
 * Whether `smart` mode may run the call without asking: decided by the tool's registry entry
 * (`readOnly`), never by its name — an MCP tool cannot pass for a built-in by its prefix. Script and
 * subagent tools are `readOnly: true` in their definitions (each call they make is judged on its own).
 */
export function isReadOnlyForMode(def: Pick<ToolDef, "name" | "readOnly">, args: unknown): boolean {
  if (typeof def.readOnly === "function") {
    try {
      return def.readOnly(args) === true;
    } catch {
      return false;
    }
  }
  return def.readOnly === true;
}

/** The mode/tool-config verdict for one call. */
export function modeVerdict(def: Pick<ToolDef, "name" | "readOnly" | "inert">, args: unknown, mode: Mode, tools: ToolPermissions): Verdict {
  if (mode === "chat") return chatRefusal(def.name);
  const configured = toolConfigVerdict(def.name, tools);
  if (configured) return configured;
  switch (mode) {
    case "autonomous":
      return { kind: "allow", inspector: "mode" };
    case "approve":
      if (def.inert === true) return { kind: "allow", inspector: "mode" };
      return { kind: "ask", inspector: "mode", userProof: false, reason: `approve mode asks before every call (${def.name})` };
    case "smart":
      if (isReadOnlyForMode(def, args)) return { kind: "allow", inspector: "mode" };
      return { kind: "ask", inspector: "mode", userProof: false, reason: `smart mode asks before calls that change state (${def.name})` };
    default:
      return assertNever(mode, "mode");
  }
}

function chatRefusal(name: string): DenyVerdict {
  return { kind: "deny", inspector: "mode", code: "mode_chat", reason: `the session is in chat mode, which runs no tools; switch the session to smart, approve or autonomous mode to use ${name}` };
}

/**
 * The refusal a call gets from its name alone, judged before its tool is resolved (resolving an MCP
 * tool's name lists its server's tools, which starts the server): every call in `chat` mode, and a name
 * whose per-tool permission is `deny`. Null when the name alone decides nothing.
 */
export function nameRefusal(name: string, mode: Mode, tools: ToolPermissions): DenyVerdict | null {
  if (mode === "chat") return chatRefusal(name);
  const v = toolConfigVerdict(name, tools);
  return v?.kind === "deny" ? v : null;
}
