/**
 * @module run/run-once
 * One prompt, one root session, one turn, one result object (SPEC §7): the core of `airlock run`,
 * reusable by the scheduler. Refused calls are collected from the gate for the run's session tree.
 */
import type { AnyEvent } from "../bus/bus.ts";
import type { ConfigOverrides } from "../config/load.ts";
import type { Mode, SandboxPolicyName } from "../config/schema.ts";
import { AirlockError } from "../errors.ts";
import type { RunOrigin } from "../notify/notifier.ts";
import type { Runtime } from "../runtime.ts";
import { headlessStatus, type RefusedCallEntry, type ResultObject } from "./result.ts";
import { knownRootOf } from "../session/graph.ts";

export type { ResultObject };

export interface RunOnceInput {
  prompt: string;
  /** No person can answer: asks are refused at once (`no_human_surface`). */
  headless: boolean;
  mode?: Mode;
  sandbox?: SandboxPolicyName;
  /** Workspace folder (must exist). */
  workspace: string;
  provider?: string;
  model?: string;
  /** Config overrides for this run's session tree only (a recipe's hooks/mode/provider). */
  overrides?: ConfigOverrides;
  /** Aborting it cancels the turn and its descendants; the result is `cancelled`. */
  signal?: AbortSignal;
  /** Called once the root session exists. */
  onSession?(sessionId: string): void;
  /** Every bus event of the run's session tree, in publish order. */
  onEvent?(ev: AnyEvent): void;
  /** A scheduled run's ids, named in its `run_finished` / `run_blocked` notification (docs/notify.md). */
  origin?: Omit<RunOrigin, "title">;
}

/** How long a finished run waits for background subagents it cancelled, ms. */
const DRAIN_MS = 5_000;

/**
 * Runs one turn in a new root session and returns the result object, and tells `notify:` how the run
 * ended (`rt.notify.runEnded`, asynchronous). Expected failures (provider errors, refusals, cancellation) are results.
 * @throws AirlockError `bad_request` (missing workspace), `privacy_violation`, `config_invalid` (bad overrides).
 */
export async function runOnce(rt: Runtime, input: RunOnceInput): Promise<ResultObject> {
  const result = await runOnceInner(rt, input);
  // `notify:`: the run's end is sent asynchronously (`run_blocked` when blocked, else `run_finished`)
  rt.notify.runEnded(result, { ...input.origin, title: input.prompt });
  return result;
}

async function runOnceInner(rt: Runtime, input: RunOnceInput): Promise<ResultObject> {
  const started = Date.now();
  const o = input.overrides ?? {};
  const mode = input.mode ?? o.mode;
  const sandbox = input.sandbox ?? o.sandbox;
  const provider = input.provider ?? o.provider?.name;
  const model = input.model ?? o.provider?.model;
  const session = await rt.createSession({
    headless: input.headless,
    workspace: input.workspace,
    ...(mode ? { mode } : {}),
    ...(sandbox ? { sandbox } : {}),
    ...(provider ? { provider } : {}),
    ...(model ? { model } : {}),
    title: input.prompt.slice(0, 80),
  });
  const root = session.id;
  input.onSession?.(root);
  if (Object.keys(o).length > 0) rt.setRunOverrides(root, o);
  // hooks of an untrusted workspace are not run: the run says so (stderr, through the runtime's log, and the result)
  const notes = await rt.hookNotes(root);
  const warnings = notes.length ? { warnings: notes } : {};

  const member = new Map<string, boolean>([[root, true]]);
  const inTree = (id: string): boolean => {
    let m = member.get(id);
    if (m === undefined) {
      try {
        m = knownRootOf(rt.store, id) === root; // the tree's sessions were made in this process: known
      } catch {
        m = false;
      }
      member.set(id, m);
    }
    return m;
  };
  const refused: RefusedCallEntry[] = [];
  const offRefused = rt.gate.onRefused((r) => {
    if (!inTree(r.session_id)) return;
    refused.push({
      tool: r.tool,
      code: r.code,
      reason: r.reason,
      session_id: r.session_id,
      call_id: r.call_id,
      from_script: r.from_script,
      ...(r.inspector ? { inspector: r.inspector } : {}),
    });
  });
  const offEvents = input.onEvent ? rt.bus.subscribeAll((ev) => inTree(ev.session_id) && input.onEvent!(ev)) : () => {};
  // tool_calls: every call of the tree the gate answered (direct, from scripts, in subagents at any depth)
  let gateCalls = 0;
  const offCalls = rt.bus.subscribeAll((ev) => {
    if (ev.type === "tool_result" && inTree(ev.session_id)) gateCalls++;
  });
  // limits.max_tokens_per_run: the run's whole tree, from its start
  const maxTokens = rt.configFor(session).limits.max_tokens_per_run;
  if (maxTokens !== undefined) rt.setTokenBudget(root, maxTokens);
  const onAbort = () => rt.cancel(root, "the run was cancelled");
  try {
    if (input.signal?.aborted) {
      return {
        session_id: root,
        status: "cancelled",
        result: null,
        tool_calls: 0,
        refused_calls: [],
        error: new AirlockError("cancelled", "the run was cancelled before its turn started").toJSON(),
        duration_ms: Date.now() - started,
        usage: null,
        ...warnings,
      };
    }
    input.signal?.addEventListener("abort", onAbort, { once: true });
    const turn = await rt.runTurn(root, input.prompt);
    await endBackgroundChildren(rt, root, inTree);
    const status = headlessStatus(turn, refused);
    let error: ResultObject["error"] = turn.error;
    if (status === "blocked" && !error) error = new AirlockError("no_human_surface", blockedMessage(refused)).toJSON();
    return {
      session_id: root,
      status,
      result: turn.answer,
      tool_calls: Math.max(gateCalls, turn.tool_calls),
      refused_calls: refused,
      error,
      duration_ms: Date.now() - started,
      usage: await rt.usage.ofSubtree(root),
      ...warnings,
    };
  } finally {
    input.signal?.removeEventListener("abort", onAbort);
    offRefused();
    offEvents();
    offCalls();
    rt.clearTokenBudget(root);
    rt.clearRunOverrides(root);
  }
}

/**
 * The error message of a blocked run: how many of its refused calls needed a person (`no_human_surface`), and,
 * apart, how many were refused for other reasons (an unknown tool, a denial…), so those are not blamed on
 * nobody being there to approve them.
 */
function blockedMessage(refused: readonly { code: string }[]): string {
  const needed = refused.filter((r) => r.code === "no_human_surface").length;
  const others = refused.length - needed;
  const also = others > 0 ? ` (and ${others} other call(s) for other reasons: see their codes)` : "";
  return `the run ended without an answer after ${needed} call(s) were refused because no person could approve them${also}; see refused_calls, then allow the no_human_surface ones (mode, hooks, tools config) or run with a person watching`;
}

/** Background subagents still running when the root turn ended are cancelled; waits (bounded) for them. */
async function endBackgroundChildren(rt: Runtime, root: string, inTree: (id: string) => boolean): Promise<void> {
  const live = rt.inflight.sessions().filter((id) => id !== root && inTree(id));
  if (live.length === 0) return;
  for (const id of live) rt.cancel(id, "the run's root turn ended");
  const waits = [...rt.background.entries()].filter(([id]) => inTree(id)).map(([, p]) => p);
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([Promise.allSettled(waits), new Promise((r) => (timer = setTimeout(r, DRAIN_MS)))]);
  clearTimeout(timer);
}
