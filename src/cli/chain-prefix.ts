/**
 * @module cli/chain-prefix
 * Which agent made a call, as the text surfaces say it before the call's tool (`airlock run`'s stderr lines
 * and refused calls, `airlock acp`'s tool call titles): `[root›subagent#0] ` for a call of a subagent at any
 * depth, nothing for the root session's own — the chain labels `airlock attach` prints. Read from parent links
 * this process already knows (session/graph.ts `knownAncestors`: no query on the hot path).
 */
import { knownAncestors, sessionName, type KnownParentLookup } from "../session/graph.ts";
import type { Session } from "../session/types.ts";
import { safe } from "./output.ts";

/** What {@link chainPrefixes} reads: parent links known in memory, and a session's row for its name. */
export interface ChainStore extends KnownParentLookup {
  getSession(id: string): Promise<Session | null>;
}

/** The chain prefixes of one process's session trees. */
export interface ChainPrefixes {
  /**
   * Reads the name of session `id` (its title, else `subagent#N`: session/graph.ts `sessionName`) for later
   * labels, once per id; asynchronous, so call it when the session is first seen (a label asked for before
   * the name arrives shows the session id). Never throws.
   */
  learn(id: string): void;
  /**
   * `[root›subagent#0] ` (names root first, joined by `›`, control characters escaped, one trailing space) for a
   * call made in session `sessionId` of the tree rooted at `root`; `""` when `sessionId` is `root`. A chain this
   * process does not know is shown as `[root›<session id>] `.
   */
  prefix(root: string, sessionId: string): string;
}

/** The chain prefixes of calls, with the names of the sessions read from `store` (see {@link ChainPrefixes}). */
export function chainPrefixes(store: ChainStore): ChainPrefixes {
  const names = new Map<string, string>();
  const asked = new Set<string>();
  return {
    learn(id) {
      if (asked.has(id)) return;
      asked.add(id);
      void store.getSession(id).then(
        (s) => names.set(id, sessionName(s, id)),
        () => {},
      );
    },
    prefix(root, sessionId) {
      if (sessionId === root) return "";
      let chain: string[];
      try {
        chain = [sessionId, ...knownAncestors(store, sessionId)].reverse();
      } catch {
        chain = [root, sessionId];
      }
      // a chain above `root` (not expected: calls are of root's tree) starts at root
      const at = chain.indexOf(root);
      if (at > 0) chain = chain.slice(at);
      return `[${chain.map((id) => (id === root ? "root" : safe(names.get(id) ?? id))).join("›")}] `;
    },
  };
}
