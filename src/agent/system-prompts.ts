/**
 * @module agent/system-prompts
 * The system prompt for each `tools.offer` (src/agent/system*.txt): it names the tools the model is offered.
 * One table for the runtime's turns and `airlock run`'s early request (cli/early-request.ts); no zod.
 */
import systemPrompt from "./system.txt" with { type: "text" };
import systemPromptDirect from "./system-direct.txt" with { type: "text" };
import systemPromptBoth from "./system-both.txt" with { type: "text" };

/** `tools.offer` → the system prompt text sent with every model call of a session with that offer. */
export const SYSTEM_PROMPTS: Readonly<Record<"code" | "direct" | "both", string>> = { code: systemPrompt, direct: systemPromptDirect, both: systemPromptBoth };
