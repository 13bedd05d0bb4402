/**
 * @module tool/interpreter
 * `interpreter__python` (`python3 -`) and `interpreter__js` (the airlock binary itself in Bun mode,
 * `BUN_BE_BUN=1 airlock -`; stack-notes §9): the source goes to the process on stdin — no host temp
 * script — and the process runs through the launcher under the call's sandbox policy.
 */
import { z } from "zod";
import { SandboxPolicyName } from "../config/schema.ts";
import { runHostProcess } from "./host-process.ts";
import { defineTool } from "./tool.ts";
import jsDescription from "./interpreter-js.txt" with { type: "text" };
import pythonDescription from "./interpreter-python.txt" with { type: "text" };

export const InterpreterArgs = z.strictObject({
  code: z.string().describe("the program source, fed to the interpreter on stdin"),
  sandbox_permissions: z.string().optional().describe(`a wider sandbox policy for this one call: ${SandboxPolicyName.options.join(" | ")} (needs a person's approval; validated by the launcher, an unknown name is refused with elevation_invalid)`),
  justification: z.string().optional().describe("why this call needs sandbox_permissions"),
});
export type InterpreterArgs = z.infer<typeof InterpreterArgs>;

export const pythonTool = defineTool({
  name: "interpreter__python",
  description: pythonDescription,
  schema: InterpreterArgs,
  readOnly: false,
  async execute(args, ctx) {
    return runHostProcess(ctx, {
      argv: ["python3", "-"],
      stdin: args.code,
      timeoutMs: ctx.config.limits.python_timeout_s * 1000,
    });
  },
});

export const jsTool = defineTool({
  name: "interpreter__js",
  description: jsDescription,
  schema: InterpreterArgs,
  readOnly: false,
  async execute(args, ctx) {
    return runHostProcess(ctx, {
      // In the compiled binary, execPath is airlock itself; BUN_BE_BUN=1 makes it act as the bun CLI.
      argv: [process.execPath, "-"],
      stdin: args.code,
      extraEnv: { BUN_BE_BUN: "1" },
      timeoutMs: ctx.config.limits.js_timeout_s * 1000,
    });
  },
});
