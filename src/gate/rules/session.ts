/**
 * @module gate/rules/session
 * The session rules of each tree ("Allow for this session", store/session-rules.ts) joined to the
 * config's `permissions` into one {@link RuleSet} per tree, compiled again only when the tree's rules
 * change (its generation moves) or its effective `permissions` block is another object. One set means one
 * parse of the call per judgement, and a compound command may be covered part by part by config and
 * session allow rules together, as by any allow rules. A tree with no session rules uses the config's
 * set as it is. The gate asks per call: a cached tree costs a few map lookups.
 */
import type { SessionRules } from "../../store/session-rules.ts";
import { parseRuleLists, RuleSet, ruleSetFor, type RuleLists } from "./index.ts";

/** Most trees whose compiled rules are kept (all are dropped past it, then compiled again on use). */
const MAX_TREES = 1024;

/** A tree's rules as the rule inspector uses them: the joined set, and which allow rule texts are session rules. */
export interface TreeRules {
  set: RuleSet;
  /** The texts of the tree's session rules (empty when it has none). */
  session: ReadonlySet<string>;
}

const NONE: ReadonlySet<string> = new Set();

/** Compiled config + session rules per tree. */
export class SessionRuleSets {
  private readonly cache = new Map<string, { generation: number; permissions: RuleLists; rules: TreeRules }>();
  /** Session rule texts per tree at a generation (the part that needs the database). */
  private readonly texts = new Map<string, { generation: number; texts: string[] }>();

  constructor(readonly rules: SessionRules) {}

  /**
   * The rules that judge a call of `sessionId`: its effective config's `permissions` plus its tree's
   * session rules (allow only). A stored rule that no longer parses is left out (it allows nothing).
   * @throws AirlockError `session_not_found`, `session_graph_invalid` from the session graph;
   *   `config_invalid` when the config's own rules are malformed (checked at start, so not in practice).
   * Synchronous (no query) when the tree's root and rules are already cached; a promise otherwise.
   */
  forSession(permissions: RuleLists, sessionId: string): TreeRules | Promise<TreeRules> {
    const known = this.rules.knownRootOf(sessionId);
    if (known !== undefined) {
      const generation = this.rules.generation(known);
      const hit = this.cache.get(known);
      if (hit && hit.generation === generation && hit.permissions === permissions) return hit.rules;
    }
    return this.compile(permissions, sessionId);
  }

  private async compile(permissions: RuleLists, sessionId: string): Promise<TreeRules> {
    const root = await this.rules.rootOf(sessionId);
    const generation = this.rules.generation(root);
    const hit = this.cache.get(root);
    if (hit && hit.generation === generation && hit.permissions === permissions) return hit.rules;
    const texts = await this.textsOf(root, generation);
    let rules: TreeRules;
    if (texts.length === 0) rules = { set: ruleSetFor(permissions), session: NONE };
    else {
      const config = parseRuleLists(permissions).rules;
      const session = parseRuleLists({ allow: texts, ask: [], deny: [] }).rules.allow;
      rules = { set: new RuleSet({ ...config, allow: [...config.allow, ...session] }), session: new Set(texts) };
    }
    if (this.cache.size >= MAX_TREES) this.cache.clear();
    this.cache.set(root, { generation, permissions, rules });
    return rules;
  }

  private async textsOf(root: string, generation: number): Promise<string[]> {
    const hit = this.texts.get(root);
    if (hit && hit.generation === generation) return hit.texts;
    const texts = (await this.rules.listRoot(root)).map((r) => r.rule);
    if (this.texts.size >= MAX_TREES) this.texts.clear();
    this.texts.set(root, { generation, texts });
    return texts;
  }
}
