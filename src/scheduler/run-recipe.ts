/**
 * @module scheduler/run-recipe
 * One headless run through the runtime: a new headless root session with the run's config overrides,
 * one turn, every refused call of the session tree collected, and the result object (SPEC §7) built
 * with the `blocked` rule of scheduler/result.ts. Used by the scheduler for each fire.
 */
import { dirname } from "node:path";
import type { BusEvent } from "../bus/bus.ts";
import type { ConfigOverrides } from "../config/load.ts";
import type { Mode, SandboxPolicyName } from "../config/schema.ts";
import { AirlockError, toAirlockError } from "../errors.ts";
import type { Runtime } from "../runtime.ts";
import { rootOf } from "../session/graph.ts";
import { parseRecipe, prepareRecipe } from "./recipe.ts";
import { headlessStatus, type RefusedCallEntry, type ResultObject } from "./result.ts";
import type { RunRecipe } from "./scheduler.ts";

/** Input of one headless run. */
export interface HeadlessRunInput {
  prompt: string;
  /** Config overrides for this run's session tree only (recipe, then flags). */
  overrides?: ConfigOverrides;
  /** Workspace folder (default: the process cwd). */
  workspace?: string;
  mode?: Mode;
  sandbox?: SandboxPolicyName;
  provider?: string;
  model?: string;
  /** Aborting it cancels the turn and its descendants; the result is `cancelled`. */
  signal?: AbortSignal;
  /** Called once the root session exists. */
  onSession?(sessionId: string): void;
  /** Every bus event of the run's session tree, in publish order. */
  onEvent?(ev: BusEvent): void;
}

/** How long a finished run waits for its background subagents to end after cancelling them, ms. */
const DESCENDANT_DRAIN_MS = 5_000;

/**
 * Runs one headless turn. Expected failures (provider errors, refusals, cancellation) are results; only
 * invalid input throws (`bad_request` for a missing workspace, `privacy_violation`, `config_invalid`).
 */
export async function runHeadless(rt: Runtime, input: HeadlessRunInput): Promise<ResultObject> {
  const started = Date.now();
  const o = input.overrides ?? {};
  const session = rt.createSession({
    headless: true,
    workspace: input.workspace ?? process.cwd(),
    ...((input.mode ?? o.mode) ? { mode: input.mode ?? o.mode } : {}),
    ...((input.sandbox ?? o.sandbox) ? { sandbox: input.sandbox ?? o.sandbox } : {}),
    ...((input.provider ?? o.provider?.name) ? { provider: input.provider ?? o.provider?.name } : {}),
    ...((input.model ?? o.provider?.model) ? { model: input.model ?? o.provider?.model } : {}),
    title: input.prompt.slice(0, 80),
  });
  const root = session.id;
  input.onSession?.(root);
  if (Object.keys(o).length > 0) rt.setRunOverrides(root, o);

  const membership = new Map<string, boolean>([[root, true]]);
  const inTree = (id: string): boolean => {
    let m = membership.get(id);
    if (m === undefined) {
      try {
        m = rootOf(rt.store, id) === root;
      } catch {
        m = false;
      }
      membership.set(id, m);
    }
    return m;
  };
  const refused: RefusedCallEntry[] = [];
  const offRefused = rt.gate.onRefused((r) => {
    if (!inTree(r.session_id)) return;
    const e: RefusedCallEntry = { tool: r.tool, code: r.code, reason: r.reason, session_id: r.session_id, call_id: r.call_id, from_script: r.from_script };
    if (r.inspector) e.inspector = r.inspector;
    refused.push(e);
  });
  const offEvents = input.onEvent
    ? rt.bus.subscribeAll((ev) => {
        if (inTree(ev.session_id)) input.onEvent!(ev);
      })
    : () => {};
  const onAbort = () => rt.cancel(root, "the headless run was cancelled");
  try {
    if (input.signal?.aborted) {
      return { session_id: root, status: "cancelled", result: null, tool_calls: 0, refused_calls: [], error: new AirlockError("cancelled", "cancelled before the turn started").toJSON(), duration_ms: Date.now() - started };
    }
    input.signal?.addEventListener("abort", onAbort, { once: true });
    const turn = await rt.runTurn(root, input.prompt);
    await endDescendants(rt, root, inTree);
    const status = headlessStatus(turn, refused);
    let error: ResultObject["error"] = turn.error;
    if (status === "blocked" && !error) {
      error = new AirlockError(
        "no_human_surface",
        `the run stopped without an answer after ${refused.length} call(s) were refused because no person can approve them in a headless run; see refused_calls, then allow those calls in the recipe's mode/hooks or run with a person watching`,
      ).toJSON();
    }
    return {
      session_id: root,
      status,
      result: turn.answer,
      tool_calls: turn.tool_calls,
      refused_calls: refused,
      error,
      duration_ms: Date.now() - started,
    };
  } finally {
    input.signal?.removeEventListener("abort", onAbort);
    offRefused();
    offEvents();
    rt.clearRunOverrides(root);
  }
}

/** Cancels background subagents of the tree still running after the root turn, and waits (bounded) for them. */
async function endDescendants(rt: Runtime, root: string, inTree: (id: string) => boolean): Promise<void> {
  const live = rt.inflight.sessions().filter((id) => id !== root && inTree(id));
  if (live.length === 0) return;
  rt.cancel(root, "the headless run's root turn ended");
  const waits = [...rt.background.entries()].filter(([id]) => inTree(id)).map(([, p]) => p);
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([Promise.allSettled(waits), new Promise((r) => (timer = setTimeout(r, DESCENDANT_DRAIN_MS)))]);
  clearTimeout(timer);
}

/**
 * The scheduler's runner over a runtime: parses the schedule's stored recipe, applies its stored
 * parameters, and runs it headless. The workspace is the recipe's `workspace`, else the recipe's directory.
 */
export function recipeRunner(rt: Runtime): RunRecipe {
  return async ({ schedule, signal, onSession }) => {
    const started = Date.now();
    try {
      const recipe = parseRecipe(schedule.recipe_text, schedule.recipe_path);
      const prepared = prepareRecipe({ recipe, path: schedule.recipe_path, dir: dirname(schedule.recipe_path), text: schedule.recipe_text }, schedule.params, schedule.recipe_path);
      return await runHeadless(rt, {
        prompt: prepared.prompt,
        overrides: prepared.overrides,
        workspace: prepared.workspace ?? dirname(schedule.recipe_path),
        signal,
        onSession,
      });
    } catch (e) {
      const err = toAirlockError(e);
      return { session_id: null, status: "failed", result: null, tool_calls: 0, refused_calls: [], error: err.toJSON(), duration_ms: Date.now() - started };
    }
  };
}
