/**
 * @module cli/run
 * `airlock run`: one turn from a prompt or a recipe, printed on stdout as text, one JSON result
 * object, or NDJSON events ending with the result (SPEC §2, §7). Logs go to stderr.
 */
import { resolve as resolvePath } from "node:path";
import type { ConfigOverrides } from "../config/load.ts";
import type { Mode, ProviderName, SandboxPolicyName } from "../config/schema.ts";
import { assertNever } from "../errors.ts";
import type { EarlyResultObject } from "../run/result.ts";
import type { CommonOptions } from "./context.ts";
import type { EarlyStart } from "./early-request.ts";
import { signalEchoFilter } from "./signal-echo.ts";

export const OUTPUT_FORMATS = ["text", "json", "stream-json"] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];

/** Options of `airlock run` (parsed and validated by `main.ts`; enums are already checked). */
export interface RunOptions extends CommonOptions {
  /**
   * `--recipe FILE`: a recipe (SPEC §8); its instructions are the prompt when PROMPT is absent. A PROMPT given
   * with it gets the same `{{ name }}` substitution as the instructions.
   */
  recipe?: string;
  /** `--param KEY=VALUE` (repeatable): recipe parameters; later values win. Always an object; non-empty only with `--recipe`. */
  param: Record<string, string>;
  /** `--headless`: no person can answer; an ask is refused at once (`no_human_surface`). */
  headless: boolean;
  /** `--output-format`: default `text`. */
  outputFormat: OutputFormat;
  /** `--mode`: overrides the config and the recipe. */
  mode?: Mode;
  /** `--sandbox`: overrides the config and the recipe. */
  sandbox?: SandboxPolicyName;
  /** `--workspace DIR`: the session's workspace; default the cwd. */
  workspace?: string;
  /** `--provider NAME`: overrides `provider.name`. */
  provider?: ProviderName;
  /** `--model NAME`: overrides `provider.model`. */
  model?: string;
}

/**
 * The config overrides the flags ask for, to apply with `mergeConfig(config, …, "command line")`
 * after the recipe's (flags win over the recipe, the recipe over `airlock.yaml`).
 */
export function flagOverrides(opts: RunOptions): ConfigOverrides {
  const o: ConfigOverrides = {};
  if (opts.mode) o.mode = opts.mode;
  if (opts.sandbox) o.sandbox = opts.sandbox;
  if (opts.provider || opts.model) {
    o.provider = {};
    if (opts.provider) o.provider.name = opts.provider;
    if (opts.model) o.provider.model = opts.model;
  }
  return o;
}

/**
 * Runs one turn: recipe (if any) → config overrides (recipe, then flags) → one runtime in-process →
 * a root session in `--workspace` (default the cwd) → `runOnce` → stdout per `outputFormat`:
 * `text` the answer; `json` one result object (SPEC §7); `stream-json` one NDJSON line per event
 * (`{"type": <event>, ...payload}`) ending with `{"type": "result", ...result}`. Everything else goes
 * to stderr. PROMPT `-` reads the prompt from stdin; stdin is never read otherwise. Without
 * `--headless`, asks are put to the person at the terminal when stdin and stderr are TTYs, and the
 * run is headless otherwise (nobody could answer).
 * `early`: what src/boot.ts's call of `startEarlyRequest` for this prompt and these options returned (null: nothing
 * started); when absent, `run` makes that call itself.
 * @returns the exit code (SPEC §2): 0 completed, 1 failed, 3 blocked, 130 cancelled (SIGINT, SIGTERM or SIGHUP).
 * @throws AirlockError `usage` (no prompt; `--param` without `--recipe`), `recipe_invalid` (also a `{{ name }}`
 *   in PROMPT that the recipe does not declare), `config_invalid`, `bad_request` (missing workspace) → exit 2 via
 *   main.ts. With `json` / `stream-json`, anything thrown before the result was printed first prints the
 *   result object of a run that never started (`earlyResult`: `status: "invalid"` for those codes).
 */
export async function run(prompt: string | undefined, opts: RunOptions, early?: EarlyStart | null): Promise<number> {
  const started = Date.now();
  const printed = { result: false };
  // the first model request may leave now, before the runtime's set-up, and is adopted only if it is
  // exactly the request the normal path makes (cli/early-request.ts; SPEC §2 "The early request");
  // src/boot.ts starts it before loading this module, and hands it over
  const earlyStart = early !== undefined ? early : await (await import("./early-request.ts")).startEarlyRequest(prompt, opts);
  try {
    return await runInner(prompt, opts, printed, earlyStart ?? undefined);
  } catch (e) {
    // json / stream-json: a run that could not start (or failed before printing its result) still prints one result object
    if (!printed.result) await writeEarlyResult(opts.outputFormat, e, Date.now() - started);
    throw e;
  } finally {
    // the run ended before its first model request (an error, a cancel): the early request is aborted
    if (earlyStart?.sent) (await import("../agent/providers/early.ts")).withdrawEarlyRequest();
  }
}

/**
 * `--output-format json` or `stream-json` as given in `argv` (the user arguments of `airlock`), when
 * `argv` is an `airlock run` command; else undefined. Reads `--output-format X` and `--output-format=X`
 * (the last one wins), and stops at `--`. Used by main.ts for usage errors commander reports before
 * `run` is called.
 */
export function machineFormatIn(argv: readonly string[]): "json" | "stream-json" | undefined {
  if (argv[0] !== "run") return undefined;
  let format: string | undefined;
  for (let i = 1; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === "--") break;
    if (a === "--output-format") format = argv[++i];
    else if (a.startsWith("--output-format=")) format = a.slice("--output-format=".length);
  }
  return format === "json" || format === "stream-json" ? format : undefined;
}

/**
 * Writes the result object of a run that ended before its turn (`earlyResult`: `status: "invalid"` for
 * usage/config errors) on stdout, as {@link printResult} does (nothing for `text`: it has no answer).
 * `durationMs`: ms since the command started.
 */
export async function writeEarlyResult(format: OutputFormat, err: unknown, durationMs: number): Promise<void> {
  if (format === "text") return;
  const { toAirlockError } = await import("../errors.ts");
  const { earlyResult } = await import("../run/result.ts");
  await printResult(format, earlyResult(toAirlockError(err), durationMs));
}

/**
 * The one place a run's result reaches stdout: `json` one JSON line (the result object, SPEC §7),
 * `stream-json` a last `{"type":"result",…}` line, `text` the answer (newline-terminated; nothing when null or blank).
 */
async function printResult(format: OutputFormat, result: EarlyResultObject): Promise<void> {
  const { writeJsonLine, writeStdout } = await import("./output.ts");
  switch (format) {
    case "json":
      writeJsonLine(result);
      return;
    case "stream-json":
      writeJsonLine({ type: "result", ...result });
      return;
    case "text":
      // no answer (none, or blank: a blocked run's) prints nothing, not an empty line
      if (result.result !== null && result.result.trim() !== "") writeStdout(result.result.endsWith("\n") ? result.result : `${result.result}\n`);
      return;
    default:
      assertNever(format, "output format");
  }
}

/**
 * What a run needs before the runtime starts: the effective config (file, recipe, flags), the prompt
 * (recipe placeholders filled, `-` read from stdin) and the workspace (absolute).
 * @throws AirlockError `usage` (no prompt, --param without --recipe, empty stdin), `recipe_invalid`, `config_invalid`.
 */
async function resolveRun(prompt: string | undefined, opts: RunOptions, early: EarlyStart | undefined) {
  const { AirlockError } = await import("../errors.ts");
  const paramNames = Object.keys(opts.param ?? {});
  if (!opts.recipe && paramNames.length > 0) {
    throw new AirlockError(
      "usage",
      `airlock run: --param needs --recipe: parameters fill a recipe's {{ name }} placeholders (got --param ${paramNames.join(", --param ")}); pass --recipe FILE, or drop --param`,
    );
  }
  const { resolveContext } = await import("./context.ts");
  const { mergeConfig } = await import("../config/load.ts");
  // an early request that left: the run goes on with the config text it was sent with (the file may have changed since)
  const ctx = await resolveContext(opts, process.env, early?.sent ? early.configText : undefined);
  let config = ctx.config;
  // made absolute once, here at the edge: the runtime, its MCP servers and the session all get the same path
  let workspace = opts.workspace === undefined ? undefined : resolvePath(opts.workspace);
  /** Applies the recipe's parameters to a PROMPT given with --recipe (identity without a recipe). */
  let render = (p: string): string => p;
  if (opts.recipe) {
    const { loadRecipe, prepareRecipe, substitutePrompt } = await import("../scheduler/recipe.ts");
    const source = opts.recipe;
    const loaded = loadRecipe(source);
    const prepared = prepareRecipe(loaded, opts.param, source);
    config = mergeConfig(config, prepared.overrides, `recipe ${source}`);
    if (prompt !== undefined && prompt !== "-") prompt = substitutePrompt(prompt, loaded.recipe, prepared.params, source);
    else if (prompt === "-") render = (p) => substitutePrompt(p, loaded.recipe, prepared.params, source);
    prompt ??= prepared.prompt;
    workspace ??= prepared.workspace;
  }
  // no flag overrides (the usual run): the config stays as loaded, not validated a second time
  const flags = flagOverrides(opts);
  if (Object.keys(flags).length > 0) config = mergeConfig(config, flags, "command line");
  // stdin is read only when asked for with PROMPT "-", so a non-TTY stdin never blocks a run (SPEC §2).
  if (prompt === "-") {
    prompt = (await Bun.stdin.text()).trim();
    if (!prompt) throw new AirlockError("usage", "airlock run: PROMPT was '-' but stdin was empty; pipe the prompt in, or pass it as an argument");
    prompt = render(prompt);
  }
  // a PROMPT of spaces only is no prompt, as an empty or blank stdin with '-' is (not a turn with nothing to do)
  if (prompt === undefined || prompt.trim() === "") {
    throw new AirlockError("usage", "airlock run: no prompt; pass PROMPT (or '-' to read it from stdin) or --recipe FILE");
  }
  return { ctx, config, prompt, workspace };
}

async function runInner(promptArg: string | undefined, opts: RunOptions, printed: { result: boolean }, early: EarlyStart | undefined): Promise<number> {
  const { ctx, config, prompt, workspace } = await resolveRun(promptArg, opts, early);
  const { safe, writeJsonLine, writeStderr } = await import("./output.ts");
  // Who can answer an ask: with --headless nobody; otherwise the person at this terminal when there is
  // one, and nobody when stdin or stderr is not a terminal (a pipe, cron, CI) — then the run is headless
  // too, so an ask is refused at once instead of waiting for an answer that cannot come.
  const { terminalCanAsk, startTerminalApprover, ttyLineReader } = await import("./terminal-approver.ts");
  const interactive = !opts.headless && terminalCanAsk();
  const headless = !interactive;
  const { createRuntime } = await import("../runtime.ts");
  const { runOnce } = await import("../run/run-once.ts");
  const { exitCodeForStatus } = await import("../run/result.ts");
  const rt = await createRuntime({ config, configDir: ctx.configDir, configPath: ctx.configPath, dataDir: ctx.dataDir, workspace: workspace ?? process.cwd(), requireModel: true });
  try {
    // a missing provider.script is a config error (exit 2), not a failed first turn; a recipe's own script is relative to the recipe
    // no model configured, or an unset key variable, is a config error too (exit 2), not a placeholder answer
    rt.checkProvider({ scriptOrigin: opts.recipe && config.provider.script !== ctx.config.provider.script ? `recipe ${opts.recipe}` : undefined, requireModel: true });
    // the config goes to the early request's cache (written on a miss only) once the runtime accepted it whole —
    // the schema, the tool names and limits createRuntime checks, the provider — and only as loaded (no recipe
    // or flag merged into what was checked): a config cached earlier would send a request every run fails
    if (config === ctx.config) early?.configLoaded(ctx.config, ctx.configText);
  } catch (e) {
    await rt.close();
    throw e;
  }
  // said once the run is sure to start (a config error is the only thing said then)
  if (!opts.headless && !interactive) {
    writeStderr("airlock: no terminal to ask on (stdin or stderr is not a TTY): running headless — calls that need a person are refused\n");
  }
  const ac = new AbortController();
  const { createProgress } = await import("./progress.ts");
  const progress = createProgress({ write: writeStderr });
  // the terminal hung up (its window closed, ssh dropped): nobody can see or answer a card any more; the turn is
  // cancelled as on SIGTERM (stored cancelled, a waiting card withdrawn), never left `running` by a default death.
  // Said by SIGHUP, or first by the end of stdin on a terminal that is gone (cli/terminal-approver.ts): one
  // cancellation either way — a hang-up after it is not a second signal that exits before the turn's end is stored
  const hangUp = (why: string) => {
    if (ac.signal.aborted) return;
    progress.log(`airlock: ${why}: cancelling the turn`);
    ac.abort();
  };
  const reader = interactive ? await ttyLineReader(() => hangUp("the terminal went away")) : undefined;
  let stopApprover: (() => void) | undefined;
  const { callTitle } = await import("./call-summary.ts");
  const { chainPrefixes } = await import("./chain-prefix.ts");
  /** `[root›subagent#0] ` before a call not made by the root session (as `airlock attach` and `airlock acp` say it). */
  const chains = chainPrefixes(rt.store);
  let root = "";
  /**
   * A call as the stderr lines name it: who made it (the chain, for a subagent's), the tool and what the call is
   * about (cli/call-summary.ts), escaped.
   */
  const callLine = (sessionId: string, tool: string, args: unknown): string => callTitle(chains.prefix(root, sessionId), tool, args);
  const callKey = (sessionId: string, callId: string): string => `${sessionId}\u0000${callId}`;
  /**
   * Each call's line from its `tool_request` until it ends well, and whether a script made it: kept for a `✗`
   * line (indented as its `→` line) and the refused calls' list.
   */
  const calls = new Map<string, { line: string; fromScript: boolean }>();
  // SIGINT, SIGTERM and SIGHUP cancel the turn (result `cancelled`, exit 130); a second signal exits 130 at once.
  // (a repeat within a few ms is the same Ctrl-C delivered twice by a forwarding wrapper: cli/signal-echo.ts)
  const isEcho = signalEchoFilter();
  const onSignal = (sig: NodeJS.Signals) => {
    if (isEcho()) return;
    reader?.endLine(); // a question on screen: what is said next starts on a line of its own
    if (ac.signal.aborted) {
      progress.stop();
      writeStderr(`airlock: ${sig} again: exiting without waiting\n`);
      process.exit(130);
    }
    progress.log(`airlock: ${sig}: cancelling the turn (send it again to exit at once)`);
    ac.abort();
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  const onHangUp = () => hangUp("SIGHUP");
  process.on("SIGHUP", onHangUp);
  try {
    const result = await runOnce(rt, {
      prompt,
      headless,
      onSession(sessionId) {
        root = sessionId;
        if (reader) stopApprover = startTerminalApprover(rt, sessionId, reader, writeStderr, (on) => progress.hold(on), () => reader.gone(), (id) => chains.prefix(sessionId, id));
      },
      workspace: workspace ?? process.cwd(),
      signal: ac.signal,
      onEvent(ev) {
        progress.onEvent(ev);
        // a subagent's name, for the chain labels of its calls (read once, when the session is first seen)
        if (ev.session_id !== root) chains.learn(ev.session_id);
        // stream-json: each event is ONE synchronous write of one complete line, so concurrent events never interleave
        if (opts.outputFormat === "stream-json") writeJsonLine({ type: ev.type, ...ev.data });
        else if (ev.type === "tool_request") {
          const line = callLine(ev.session_id, ev.data.tool, ev.data.arguments);
          calls.set(callKey(ev.session_id, ev.data.call_id), { line, fromScript: ev.data.from_script });
          progress.log(`airlock: ${ev.data.from_script ? "  script → " : "→ "}${line}${ev.data.rewritten_by !== undefined ? ` (input rewritten by hook ${safe(ev.data.rewritten_by)})` : ""}`);
        } else if (ev.type === "hook_message") progress.log(`airlock: hook ${safe(ev.data.hook)} (${ev.data.event}): ${ev.data.kind === "stopped" ? "stopped the turn: " : ""}${safe(ev.data.message)}`);
        else if (ev.type === "tool_result") {
          const key = callKey(ev.session_id, ev.data.call_id);
          if (ev.data.ok) calls.delete(key);
          else {
            const err = ev.data.error as { code?: string; message?: string } | undefined;
            const call = calls.get(key);
            progress.log(`airlock: ${call?.fromScript ? "  ✗ " : "✗ "}${call?.line ?? callLine(ev.session_id, ev.data.tool, undefined)} — ${safe(String(err?.code))}: ${safe(String(err?.message))}`);
          }
        }
      },
    });
    progress.stop();
    // an early request that was not adopted (its FIELD differed; warned on stderr) is in the audit log too
    const mismatch = early?.sent ? (await import("../agent/providers/early.ts")).takeEarlyMismatch() : undefined;
    if (mismatch !== undefined) await rt.store.audit({ kind: "early_request_not_adopted", outcome: "recorded", session_id: result.session_id, detail: { field: mismatch } });
    printed.result = true;
    await printResult(opts.outputFormat, result);
    // text mode has no result object: the calls its error line's refused_calls names are listed here, one a line.
    // They are the calls the gate did not run, for whatever reason their code gives — not only a person's or a
    // rule's refusal: a run cancelled while a call waited for approval has it here as `cancelled` (SPEC §7)
    if (opts.outputFormat === "text" && result.status !== "completed" && result.refused_calls.length > 0) {
      const listed = result.refused_calls.map((r) => `airlock:   ${(r.call_id && calls.get(callKey(r.session_id, r.call_id))?.line) || callLine(r.session_id, r.tool, undefined)} — ${safe(r.code)}\n`);
      writeStderr(`airlock: refused_calls (calls that were not run, and why):\n${listed.join("")}`);
    }
    // the status, then the error's code when it says more (a cancelled run's error is `cancelled`: said once)
    if (result.status !== "completed" && result.error) writeStderr(`airlock: ${result.status}: ${result.error.code === result.status ? "" : `${result.error.code}: `}${result.error.message}\n`);
    return exitCodeForStatus(result.status);
  } finally {
    stopApprover?.();
    reader?.close();
    progress.stop();
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
    process.off("SIGHUP", onHangUp);
    await rt.close();
  }
}
