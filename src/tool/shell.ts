/**
 * @module tool/shell
 * `developer__shell`: `bash -c COMMAND` in the session workspace, through the launcher (policy →
 * bubblewrap, allow-listed env, timeout, tree kill, output caps). Claude Code name: `Bash`.
 */
import { z } from "zod";
import { SandboxPolicyName } from "../config/schema.ts";
import { runHostProcess } from "./host-process.ts";
import { isKnownReadOnlyCommand } from "./read-only-commands.ts";
import { defineTool, renameClaudeFields } from "./tool.ts";
import description from "./shell.txt" with { type: "text" };

/** The most a call may ask for with `timeout_s` when the configured default is lower, seconds. */
export const SHELL_MAX_TIMEOUT_S = 600;

export const ShellArgs = z.strictObject({
  command: z.string().min(1).describe("the command line, run with bash -c"),
  timeout_s: z.number().positive().optional().describe("seconds before the whole process tree is killed"),
  sandbox_permissions: z.string().optional().describe(`a wider sandbox policy for this one call: ${SandboxPolicyName.options.join(" | ")} (needs a person's approval; validated by the launcher, an unknown name is refused with elevation_invalid)`),
  justification: z.string().optional().describe("why this call needs sandbox_permissions"),
});
export type ShellArgs = z.infer<typeof ShellArgs>;

/** The timeout of one shell call, ms: `timeout_s` when given (capped at max(default, 600 s)), else `limits.shell_timeout_s`. */
export function shellTimeoutMs(args: { timeout_s?: number }, defaultS: number): number {
  const s = args.timeout_s === undefined ? defaultS : Math.min(args.timeout_s, Math.max(defaultS, SHELL_MAX_TIMEOUT_S));
  return Math.round(s * 1000);
}

export const shellTool = defineTool({
  name: "developer__shell",
  description,
  schema: ShellArgs,
  // a known read-only command (./read-only-commands.ts) runs in smart mode without the mode's ask;
  // a call asking for a wider sandbox never counts as read-only
  readOnly: (args) => args.sandbox_permissions === undefined && isKnownReadOnlyCommand(args.command),
  claude: {
    name: "Bash",
    input(args) {
      const input: Record<string, unknown> = { command: args.command };
      if (args.timeout_s !== undefined) input.timeout = Math.round(args.timeout_s * 1000); // Claude Code: ms
      return input;
    },
    // a hook's updatedInput: `command`, `timeout` (ms); the elevation fields hooks never see stay the call's own
    args(input, { original }) {
      const out = renameClaudeFields("developer__shell", input, { command: "command", timeout: "timeout_s" });
      if (typeof out === "string") return out;
      if (typeof out.timeout_s === "number") out.timeout_s = out.timeout_s / 1000;
      const o = (original ?? {}) as Record<string, unknown>;
      for (const k of ["sandbox_permissions", "justification"]) if (o[k] !== undefined) out[k] = o[k];
      return out;
    },
  },
  async execute(args, ctx) {
    return runHostProcess(ctx, {
      argv: ["bash", "-c", args.command],
      timeoutMs: shellTimeoutMs(args, ctx.config.limits.shell_timeout_s),
    });
  },
});
