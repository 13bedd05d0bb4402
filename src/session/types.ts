/**
 * @module session/types
 * The stored shape of a session (SPEC §1) and of a message. Schema and type share a name.
 */
import { z } from "zod";
import { Mode, Privacy, SandboxPolicyName } from "../config/schema.ts";

export const Session = z.object({
  id: z.string(),
  parent_session_id: z.string().nullable(),
  /** Absolute path of the workspace folder (real path). */
  workspace: z.string(),
  mode: Mode,
  sandbox: SandboxPolicyName,
  privacy: Privacy,
  /** True for scheduled / `airlock run --headless` sessions and every descendant of one. */
  headless: z.boolean(),
  provider: z.string(),
  model: z.string().nullable(),
  /** 0-based spawn order of this subagent within its root's tree (null for a root). */
  spawn_index: z.number().int().nullable(),
  /** Number of subagents spawned so far in this root's tree (roots only; 0 elsewhere). */
  spawn_count: z.number().int(),
  title: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type Session = z.infer<typeof Session>;

/** What creating a session stores: the fields a caller chooses (ids, spawn counters and times are the store's). */
export interface NewSession {
  parent_session_id?: string | null;
  workspace: string;
  mode: Mode;
  sandbox: SandboxPolicyName;
  privacy: Privacy;
  headless: boolean;
  provider: string;
  model?: string | null;
  title?: string | null;
}

export const MessageRole = z.enum(["system", "user", "assistant", "tool"]);
export type MessageRole = z.infer<typeof MessageRole>;

/** A tool call requested by the model, arguments already parsed (or `invalid` holding the raw text). */
export const ToolCallRequest = z.object({
  id: z.string(),
  name: z.string(),
  arguments: z.unknown(),
  /** Set when the model's argument text did not parse as JSON; the tool is then not run. */
  invalid: z.string().optional(),
});
export type ToolCallRequest = z.infer<typeof ToolCallRequest>;

/** One conversation entry as stored and as handed to providers. */
export const Message = z.object({
  id: z.string(),
  session_id: z.string(),
  turn_id: z.string().nullable(),
  role: MessageRole,
  content: z.string(),
  /** assistant: the tool calls it requested. */
  tool_calls: z.array(ToolCallRequest).optional(),
  /** tool: which call this answers, the tool name, and whether it failed. */
  tool_call_id: z.string().optional(),
  name: z.string().optional(),
  is_error: z.boolean().optional(),
  /**
   * assistant: what its provider needs given back unchanged with the rest of the history (Anthropic's
   * thinking and redacted-thinking blocks with their signatures, OpenAI Responses reasoning items with
   * their encrypted content, DeepSeek's `reasoning_content`), tagged with the provider that produced it.
   * Opaque to airlock; a provider replays only its own (`provider` = its `Provider.name`).
   */
  provider_state: z.strictObject({ provider: z.string(), data: z.unknown() }).optional(),
  created_at: z.string(),
});
export type Message = z.infer<typeof Message>;

/**
 * Tokens summed over model calls (one turn, a session, a session subtree, a run), as the providers
 * reported them (agent/providers/provider.ts `TokenUsage`): `input_tokens` includes cached ones;
 * `cached_input_tokens`, `cache_write_input_tokens` and `reasoning_tokens` appear only when some call
 * reported them. `model_calls`: calls counted; `unreported_calls`: those whose provider reported no
 * usage (their tokens are in no sum). Where no call reported usage there is no summary (null / absent),
 * never zeros.
 */
export const UsageSummary = z.strictObject({
  input_tokens: z.number().int().min(0),
  output_tokens: z.number().int().min(0),
  cached_input_tokens: z.number().int().min(0).optional(),
  cache_write_input_tokens: z.number().int().min(0).optional(),
  reasoning_tokens: z.number().int().min(0).optional(),
  model_calls: z.number().int().min(0),
  unreported_calls: z.number().int().min(1).optional(),
});
export type UsageSummary = z.infer<typeof UsageSummary>;
