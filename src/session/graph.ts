/**
 * @module session/graph
 * The session graph, read from stored parent links only (never from anything a model wrote):
 * the ancestor chain of a session and its root. Depth-bounded (32) and cycle-guarded: a corrupted
 * table yields `session_graph_invalid`, never a loop.
 */
import { AirlockError } from "../errors.ts";
import type { Session } from "./types.ts";

/** Deepest ancestor chain followed (a root plus 32 levels of subagents). */
export const MAX_DEPTH = 32;

/** Anything that can answer "who is the stored parent of this session?" (the Store does). */
export interface ParentLookup {
  /** The stored parent id; `null` for a root; `undefined` when the session does not exist. */
  parentOf(id: string): string | null | undefined | Promise<string | null | undefined>;
}

/**
 * The ancestors of `sessionId`, nearest first: `[parent, grandparent, …, root]` (empty for a root).
 * Throws `session_not_found` for an unknown session or a dangling parent link, and
 * `session_graph_invalid` for a cycle or a chain deeper than {@link MAX_DEPTH}.
 */
export async function ancestors(store: ParentLookup, sessionId: string): Promise<string[]> {
  const seen = new Set<string>([sessionId]);
  const chain: string[] = [];
  let parent = await store.parentOf(sessionId);
  if (parent === undefined) throw new AirlockError("session_not_found", `no session ${sessionId}`);
  while (parent !== null) {
    if (seen.has(parent)) {
      throw new AirlockError("session_graph_invalid", `the stored session graph has a cycle through ${parent} (reached from ${sessionId}); refusing to route`);
    }
    if (chain.length >= MAX_DEPTH) {
      throw new AirlockError("session_graph_invalid", `the ancestor chain of ${sessionId} is deeper than ${MAX_DEPTH}; refusing to route`);
    }
    seen.add(parent);
    chain.push(parent);
    const next = await store.parentOf(parent);
    if (next === undefined) throw new AirlockError("session_not_found", `session ${parent} (an ancestor of ${sessionId}) does not exist`);
    parent = next;
  }
  return chain;
}

/** The root of `sessionId`'s chain (itself for a root). Same errors as {@link ancestors}. */
export async function rootOf(store: ParentLookup, sessionId: string): Promise<string> {
  const chain = await ancestors(store, sessionId);
  return chain.length ? chain[chain.length - 1]! : sessionId;
}

/** The name a session shows in a chain label (the console, notifications): its title, else `root` / `subagent#N` (N = spawn order in its tree); the id when the session is unknown. */
export function sessionName(s: Pick<Session, "title" | "parent_session_id" | "spawn_index"> | null, id: string): string {
  if (!s) return id;
  if (s.title) return s.title;
  return s.parent_session_id ? `subagent#${s.spawn_index ?? "?"}` : "root";
}

/** A parent lookup answered from memory only (the Store's cache of parent links it read or wrote). */
export interface KnownParentLookup {
  /** The stored parent id when known in this process (`null` for a root); `undefined` when not known (yet). */
  knownParentOf(id: string): string | null | undefined;
}

/**
 * The ancestors of `sessionId`, nearest first, from parent links already known in memory (no query): for the
 * hot paths that must stay synchronous. Call {@link ancestors} once first for a session another process wrote.
 * @throws AirlockError `session_not_found` when a link is not known in this process (fail closed),
 *   `session_graph_invalid` for a cycle or a chain deeper than {@link MAX_DEPTH}.
 */
export function knownAncestors(store: KnownParentLookup, sessionId: string): string[] {
  const seen = new Set<string>([sessionId]);
  const chain: string[] = [];
  let id = sessionId;
  let parent = store.knownParentOf(id);
  while (parent !== null) {
    if (parent === undefined) throw new AirlockError("session_not_found", `the parent of session ${id} is not known to this process yet (the chain of ${sessionId} was not read)`);
    if (seen.has(parent)) throw new AirlockError("session_graph_invalid", `the stored session graph has a cycle through ${parent} (reached from ${sessionId}); refusing to route`);
    if (chain.length >= MAX_DEPTH) throw new AirlockError("session_graph_invalid", `the ancestor chain of ${sessionId} is deeper than ${MAX_DEPTH}; refusing to route`);
    seen.add(parent);
    chain.push(parent);
    id = parent;
    parent = store.knownParentOf(id);
  }
  return chain;
}

/** The root of `sessionId` from parent links known in memory (no query). Same errors as {@link knownAncestors}. */
export function knownRootOf(store: KnownParentLookup, sessionId: string): string {
  const chain = knownAncestors(store, sessionId);
  return chain.length ? chain[chain.length - 1]! : sessionId;
}
