/**
 * @module card/relay
 * Where a card is published: its home, plus at most one escalation surface — the root of the
 * home's ancestor chain, where a person is watching. Computed from the stored session graph only
 * (src/session/graph.ts: depth-bounded, cycle-guarded), never from anything a model wrote.
 */
import { ancestors, type ParentLookup } from "../session/graph.ts";
import type { Session } from "../session/types.ts";

/**
 * The surfaces of a card homed in `homeId`: `[home]` for a root, `[home, root]` for a subagent at any depth.
 * Never lists a session twice and never escalates to the home itself.
 * @throws AirlockError `session_not_found` / `session_graph_invalid` from the graph (callers fail closed).
 */
export async function surfacesFor(store: ParentLookup, homeId: string): Promise<string[]> {
  const chain = await ancestors(store, homeId);
  const root = chain.length ? chain[chain.length - 1]! : homeId;
  return root === homeId ? [homeId] : [homeId, root];
}

/** Anything that can read a stored session (the Store). */
export interface SessionLookup extends ParentLookup {
  getSession(id: string): Promise<Session | null>;
}

/**
 * Whether no person can answer in `sessionId`: the session row says `headless`, or any stored
 * ancestor does (a descendant of a headless run is headless too, whatever its own row says).
 * @throws AirlockError from the graph when the chain is invalid (callers fail closed).
 */
export async function isHeadlessChain(store: SessionLookup, sessionId: string): Promise<boolean> {
  const self = await store.getSession(sessionId);
  if (!self || self.headless) return true;
  for (const id of await ancestors(store, sessionId)) {
    const s = await store.getSession(id);
    if (!s || s.headless) return true;
  }
  return false;
}
