/**
 * @module gate/context
 * The calling context of a tool call, carried by AsyncLocalStorage: session id, turn id, call id.
 * `use()` throws `gate_no_session` when there is none: that error is how the gate fails closed.
 * Read it after `await` in the caller's flow, never inside a raw worker 'message' handler
 * (there the store is the port's, i.e. undefined — stack-notes §4).
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { AirlockError } from "../errors.ts";

export interface CallContext {
  sessionId: string;
  turnId: string;
  /** The tool call being executed in this context (for a script: the `code_execution__execute` call). */
  callId: string;
}

const als = new AsyncLocalStorage<CallContext>();

export const GateContext = {
  /** Runs `fn` with `ctx` as the calling context. */
  provide<T>(ctx: CallContext, fn: () => T): T {
    return als.run(ctx, fn);
  },
  /** The current context, or throws `gate_no_session`. */
  use(): CallContext {
    const ctx = als.getStore();
    if (!ctx) throw new AirlockError("gate_no_session", "tool call refused: it was made outside any session turn (no calling context)");
    return ctx;
  },
  /** The current context, or undefined. */
  get(): CallContext | undefined {
    return als.getStore();
  },
};
