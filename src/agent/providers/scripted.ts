/**
 * @module agent/providers/scripted
 * The `scripted` provider (SPEC §3): replays model turns from a YAML file so everything but the
 * model is real in tests and demos. Stateless: the turn a session gets is picked from its history
 * (see `createScriptedProvider`), so it survives restarts and needs no bookkeeping by the loop.
 */
import { readRegularFile } from "../../config/paths.ts";
import { isAbsolute, resolve } from "node:path";
import { z } from "zod";
import { AirlockError } from "../../errors.ts";
import { newId } from "../../ids.ts";
import type { ModelRequest, ModelTurn, Provider, ProviderConfig, ProviderOptions } from "./provider.ts";
import { abortableSleep, cancelledError } from "./retry.ts";

export const ScriptedToolCall = z.strictObject({
  name: z.string().min(1),
  arguments: z.record(z.string(), z.unknown()).default({}),
});

/** One model turn of a script. */
export const ScriptedTurn = z.strictObject({
  /** The answer text (streamed through `onDelta` as one fragment). */
  text: z.string().optional(),
  tool_calls: z.array(ScriptedToolCall).optional(),
  /** After the text is streamed, wait this long (ms, abortable) before the turn completes. */
  delay_ms: z.number().int().min(0).optional(),
  /** Makes this model call fail with `provider_error` and this message. */
  error: z.string().min(1).optional(),
  /** The token usage this model call reports (provider.ts `TokenUsage`); absent = not reported. */
  usage: z
    .strictObject({
      input_tokens: z.number().int().min(0),
      output_tokens: z.number().int().min(0),
      cached_input_tokens: z.number().int().min(0).optional(),
      cache_write_input_tokens: z.number().int().min(0).optional(),
      reasoning_tokens: z.number().int().min(0).optional(),
    })
    .optional(),
});
export type ScriptedTurn = z.infer<typeof ScriptedTurn>;

export const Script = z.strictObject({
  /** Turns of the root session. */
  turns: z.array(ScriptedTurn).default([]),
  /** `subagents[N].turns`: the N-th subagent spawned in the run (0-based, spawn order). */
  subagents: z.array(z.strictObject({ turns: z.array(ScriptedTurn).default([]) })).default([]),
});
export type Script = z.infer<typeof Script>;

/** The answer once a session's turns are used up (SPEC §3). */
export const SCRIPT_ENDED = "(script ended)";

/**
 * The answer of the scripted provider when no `provider.script` is configured at all: the default
 * config names no model, and a new user must learn that from the answer, not from a silent
 * `(script ended)`.
 */
export const NO_MODEL_CONFIGURED =
  "(no model configured: airlock.yaml sets no provider, so the built-in scripted provider answered. Set provider.name/model/base_url — see docs/configuration.md and docs/quickstart.md §6)";

/**
 * Parses and validates a script's YAML text. `sourceName` (a file name) starts every message.
 * An empty document is an empty script.
 * @throws AirlockError `config_invalid`, e.g. `script turns.yaml: turns[1].tool_calls[0].name: Required`.
 */
export function parseScript(text: string, sourceName: string): Script {
  let data: unknown;
  try {
    // loaded here, on a script's first parse: a run with another provider never evaluates the `yaml` package
    data = (require("yaml") as typeof import("yaml")).parse(text);
  } catch (e) {
    throw new AirlockError("config_invalid", `script ${sourceName}: not valid YAML: ${(e as Error).message.split("\n")[0]!.replace(/:\s*$/, "")}`);
  }
  const r = Script.safeParse(data ?? {});
  if (r.success) return r.data;
  const issue = r.error.issues[0]!;
  const path = formatPath(issue.path);
  const missing = issue.code === "invalid_type" && valueAt(data, issue.path) === undefined;
  const what = missing ? "Required" : issue.message;
  throw new AirlockError("config_invalid", `script ${sourceName}: ${path ? `${path}: ` : ""}${what}. See docs/configuration.md ("The scripted provider") for the format ({turns: [{text?, tool_calls?: [{name, arguments}]}], subagents: [{turns}]}).`, {
    path,
  });
}

/** `["turns", 1, "tool_calls", 0, "name"]` → `turns[1].tool_calls[0].name`. */
function formatPath(path: readonly PropertyKey[]): string {
  let out = "";
  for (const p of path) out += typeof p === "number" ? `[${p}]` : out ? `.${String(p)}` : String(p);
  return out;
}

function valueAt(data: unknown, path: readonly PropertyKey[]): unknown {
  let v: any = data;
  for (const p of path) {
    if (v === null || typeof v !== "object") return undefined;
    v = v[p as any];
  }
  return v;
}

/**
 * The most the scripted provider's script file may hold, bytes: 16 MiB. It replays model turns in tests and demos; a
 * real model's turn is bounded by its output tokens (about 0.5 MiB at 128k), so 16 MiB holds dozens of such turns, and
 * the parsed turns stay in memory for the process's life; a sparse or endless file named there would stall the start.
 */
export const MAX_SCRIPT_FILE_BYTES = 16 << 20;

/**
 * Reads and validates the script named by `cfg.script` (at most {@link MAX_SCRIPT_FILE_BYTES}) (relative to `opts.configDir`); no `script` = an empty script.
 * The unreadable-file message names where a relative path resolves: `opts.scriptOrigin` when given
 * (e.g. `recipe nightly.yaml`, whose loader already made the path absolute), else the config file's folder.
 * @throws AirlockError `config_invalid` when the file cannot be read or is invalid.
 */
export function loadScript(cfg: ProviderConfig, opts: ProviderOptions): Script {
  if (!cfg.script) return Script.parse({});
  const file = isAbsolute(cfg.script) ? cfg.script : resolve(opts.configDir, cfg.script);
  let text: string;
  try {
    text = readRegularFile(file, { maxBytes: MAX_SCRIPT_FILE_BYTES }).toString("utf8"); // a FIFO there never blocks (config/paths.ts)
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    const why = code === "EFBIG" ? `EFBIG: larger than ${MAX_SCRIPT_FILE_BYTES} bytes (16 MiB), the most a script of model turns may hold` : (code ?? (e as Error).message);
    const relative = opts.scriptOrigin
      ? `a relative provider.script resolves against the folder of ${opts.scriptOrigin}`
      : `a relative provider.script resolves against the config file's folder (${opts.configDir})`;
    throw new AirlockError("config_invalid", `provider.script: cannot read ${file} (${why}); ${relative}. Fix the path or create the file.`, { file });
  }
  return parseScript(text, cfg.script);
}

/**
 * Builds the scripted provider from `cfg.script` (read once, now).
 *
 * Which turn a call gets: root sessions (`parent_session_id` null) read `turns`, a subagent with
 * `spawn_index` N reads `subagents[N].turns` (a subagent without a spawn_index, or beyond the list,
 * has no turns). The index is the number of assistant messages in the WHOLE history of
 * `req.messages`, so turn k is the k-th model call of that session across all its replies.
 * A turn with `error` leaves no assistant message, so this provider instance also counts the error
 * turns it served per session and skips them (a reply after a failed turn gets the next turn).
 * Past the end the answer is `(script ended)` with no tool calls; with no `script` configured at all,
 * every call answers {@link NO_MODEL_CONFIGURED} instead. Usage is the turn's `usage`, else unknown (undefined).
 * @throws AirlockError `config_invalid` (bad script file) from the factory; `provider_error` for `error` turns,
 * `cancelled` when the signal aborts (also during `delay_ms`).
 */
export function createScriptedProvider(cfg: ProviderConfig, opts: ProviderOptions): Provider {
  const script = loadScript(cfg, opts);
  const ended = cfg.script ? SCRIPT_ENDED : NO_MODEL_CONFIGURED;
  const errorsServed = new Map<string, number>();

  function turnsFor(s: ModelRequest["session"]): ScriptedTurn[] {
    if (s.parent_session_id === null) return script.turns;
    if (s.spawn_index === null) return [];
    return script.subagents[s.spawn_index]?.turns ?? [];
  }

  return {
    name: "scripted",
    async complete(req: ModelRequest): Promise<ModelTurn> {
      if (req.signal.aborted) throw cancelledError();
      const k = req.messages.filter((m) => m.role === "assistant").length + (errorsServed.get(req.session.id) ?? 0);
      const turn = turnsFor(req.session)[k];
      if (!turn) {
        req.onDelta?.(ended);
        return { text: ended, tool_calls: [], stop_reason: "end_turn", truncated: false, usage: undefined };
      }
      const text = turn.text ?? "";
      if (text) req.onDelta?.(text);
      if (turn.delay_ms) await abortableSleep(turn.delay_ms, req.signal);
      if (req.signal.aborted) throw cancelledError();
      if (turn.error !== undefined) {
        errorsServed.set(req.session.id, (errorsServed.get(req.session.id) ?? 0) + 1);
        throw new AirlockError("provider_error", `scripted provider: ${turn.error}`, { partial_text: text, retryable: false, script_turn: k });
      }
      const tool_calls = (turn.tool_calls ?? []).map((c) => ({ id: newId("call"), name: c.name, arguments: structuredClone(c.arguments) }));
      return { text, tool_calls, stop_reason: tool_calls.length > 0 ? "tool_calls" : "end_turn", truncated: false, usage: turn.usage ? { ...turn.usage } : undefined };
    },
  };
}
