/**
 * @module gate/rules/session
 * The session rules of each tree ("Allow for this session", store/session-rules.ts) compiled into a
 * {@link RuleSet} of allow rules, once per tree and again only after the tree's rules change (its
 * generation moves). The gate asks per call: a cached tree costs two map lookups.
 */
import type { SessionRules } from "../../store/session-rules.ts";
import { parseRuleLists, RuleSet } from "./index.ts";

/** Most trees whose compiled rules are kept (all are dropped past it, then compiled again on use). */
const MAX_TREES = 1024;

/** Compiled session rules per tree. */
export class SessionRuleSets {
  private readonly cache = new Map<string, { generation: number; set: RuleSet }>();

  constructor(readonly rules: SessionRules) {}

  /**
   * The compiled allow rules of the tree `sessionId` belongs to (an empty set when it has none). A stored
   * rule that no longer parses is left out (it allows nothing).
   * @throws AirlockError `session_not_found`, `session_graph_invalid` from the session graph.
   */
  forSession(sessionId: string): RuleSet {
    const root = this.rules.rootOf(sessionId);
    const generation = this.rules.generation(root);
    const hit = this.cache.get(root);
    if (hit && hit.generation === generation) return hit.set;
    const { rules } = parseRuleLists({ allow: this.rules.listRoot(root).map((r) => r.rule), ask: [], deny: [] });
    const set = new RuleSet(rules);
    if (this.cache.size >= MAX_TREES) this.cache.clear();
    this.cache.set(root, { generation, set });
    return set;
  }
}
