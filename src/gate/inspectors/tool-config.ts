/**
 * @module gate/inspectors/tool-config
 * Per-tool permission from `config.tools[name].permission` (`allow | ask | deny`), keyed by airlock's tool name.
 */
import type { ToolPermissions } from "../../config/schema.ts";
import type { Verdict } from "../verdict.ts";
import { assertNever } from "../../errors.ts";

/** The configured verdict for `name`, or null when the config says nothing about it. */
export function toolConfigVerdict(name: string, tools: ToolPermissions): Verdict | null {
  const entry = tools[name];
  const p = typeof entry === "object" ? entry.permission : undefined;
  switch (p) {
    case undefined:
      return null;
    case "allow":
      return { kind: "allow", inspector: "tool_config" };
    case "ask":
      return { kind: "ask", inspector: "tool_config", userProof: false, reason: `config.tools.${name}.permission is "ask"` };
    case "deny":
      return { kind: "deny", inspector: "tool_config", code: "denied", reason: `config.tools.${name}.permission is "deny"; change it in airlock.yaml to use this tool` };
    default:
      return assertNever(p, "tool permission");
  }
}
