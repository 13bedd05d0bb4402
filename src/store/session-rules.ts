/**
 * @module store/session-rules
 * Session rules ("Allow for this session", SPEC §5): allow rules a person added from a card, held for
 * a session TREE (keyed by its root) in the `session_rules` table (store/db.ts migration 5). Each add
 * and removal is audited (`session_rule_added`, `session_rule_removed`). Every change bumps the tree's
 * generation, so a compiled copy (gate/rules/session.ts) knows when to compile again.
 */
import { AirlockError } from "../errors.ts";
import { newId } from "../ids.ts";
import { rootOf } from "../session/graph.ts";
import type { Store } from "./store.ts";

/** One stored session rule. `created_at`: ISO time; `added_in`: the session the card was answered from. */
export interface SessionRule {
  id: string;
  root_session_id: string;
  rule: string;
  request_id: string | null;
  added_in: string | null;
  actor: string | null;
  created_at: string;
}

/** Who adds a rule and from which card. */
export interface SessionRuleOrigin {
  request_id?: string;
  added_in?: string;
  actor?: string;
  /** Whether the answer carried the approver token (recorded in the audit row). */
  proof?: boolean;
}

/** The session rules of every tree, over the store's database. */
export class SessionRules {
  /** Root by session id (a session's parent never changes once stored). */
  private readonly roots = new Map<string, string>();
  /** Changes per root since start (0 when never changed). */
  private readonly generations = new Map<string, number>();

  constructor(private readonly store: Store) {}

  /**
   * The root of `sessionId`'s tree (itself for a root), cached.
   * @throws AirlockError `session_not_found`, `session_graph_invalid` (session/graph.ts).
   */
  async rootOf(sessionId: string): Promise<string> {
    let r = this.roots.get(sessionId);
    if (r === undefined) {
      r = await rootOf(this.store, sessionId);
      if (this.roots.size > 10_000) this.roots.clear();
      this.roots.set(sessionId, r);
    }
    return r;
  }

  /** The root of `sessionId` when this process already resolved it (no query), else undefined. */
  knownRootOf(sessionId: string): string | undefined {
    return this.roots.get(sessionId);
  }

  /**
   * How many times the tree rooted at `rootId` changed in this process: a cache of its compiled rules is valid
   * while this is unchanged. On PostgreSQL other processes add and remove rules this process never hears of,
   * so no cache may be trusted there: every call gets a new value and the rules are read again (a rule
   * removed through another node must stop allowing at once — fail closed; found by an attack on two serves).
   */
  generation(rootId: string): number {
    if (this.store.sql.dialect === "postgres") return --this.unshared;
    return this.generations.get(rootId) ?? 0;
  }

  /** Decreasing values handed out on PostgreSQL, never equal to a cached generation (those are ≥ 0). */
  private unshared = 0;

  /**
   * Adds `rule` (already validated by the caller) as an allow rule for the tree of `sessionId`, and
   * audits it (`session_rule_added`, with the rule and who added it). A rule the tree already holds is
   * not stored twice: the existing row is returned.
   * @throws AirlockError `session_not_found`, `session_graph_invalid` from the session graph.
   */
  async add(sessionId: string, rule: string, from: SessionRuleOrigin = {}): Promise<SessionRule> {
    const root = await this.rootOf(sessionId);
    const row = await this.store.sql.transaction(async (tx): Promise<SessionRule> => {
      const have = await tx.get<SessionRule>("SELECT * FROM session_rules WHERE root_session_id = ? AND rule = ?", [root, rule]);
      if (have) return have;
      const r: SessionRule = {
        id: newId("rul"),
        root_session_id: root,
        rule,
        request_id: from.request_id ?? null,
        added_in: from.added_in ?? null,
        actor: from.actor ?? null,
        created_at: new Date().toISOString(),
      };
      await tx.run("INSERT INTO session_rules (id, root_session_id, rule, request_id, added_in, actor, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)", [
        r.id,
        r.root_session_id,
        r.rule,
        r.request_id,
        r.added_in,
        r.actor,
        r.created_at,
      ]);
      return r;
    });
    this.bump(root);
    await this.store.audit({
      kind: "session_rule_added",
      outcome: "recorded",
      request_id: from.request_id ?? null,
      session_id: from.added_in ?? sessionId,
      home_session_id: root,
      decision: "allow_session",
      actor: from.actor ?? null,
      detail: { rule, rule_id: row.id, root_session_id: root, ...(from.proof !== undefined ? { proof: from.proof } : {}) },
    });
    return row;
  }

  /**
   * The rules of the tree `sessionId` belongs to, oldest first.
   * @throws AirlockError `session_not_found`, `session_graph_invalid`.
   */
  async list(sessionId: string): Promise<SessionRule[]> {
    return this.listRoot(await this.rootOf(sessionId));
  }

  /** The rules stored for the tree rooted at `rootId`, oldest first (no graph lookup). */
  async listRoot(rootId: string): Promise<SessionRule[]> {
    return this.store.sql.all<SessionRule>("SELECT * FROM session_rules WHERE root_session_id = ? ORDER BY created_at, id", [rootId]);
  }

  /**
   * Removes rule `ruleId` of the tree `sessionId` belongs to, and audits it (`session_rule_removed`).
   * @returns the removed rule.
   * @throws AirlockError `not_found` when that tree holds no such rule (another tree's rule included);
   *   `session_not_found`, `session_graph_invalid` from the graph.
   */
  async remove(sessionId: string, ruleId: string, actor?: string): Promise<SessionRule> {
    const root = await this.rootOf(sessionId);
    const row = await this.store.sql.get<SessionRule>("SELECT * FROM session_rules WHERE id = ? AND root_session_id = ?", [ruleId, root]);
    if (!row) throw new AirlockError("not_found", `the session tree of ${sessionId} has no rule ${ruleId}; list its rules with GET /sessions/${sessionId}/rules`);
    await this.store.sql.run("DELETE FROM session_rules WHERE id = ?", [ruleId]);
    this.bump(root);
    await this.store.audit({
      kind: "session_rule_removed",
      outcome: "recorded",
      session_id: sessionId,
      home_session_id: root,
      actor: actor ?? null,
      detail: { rule: row.rule, rule_id: row.id, root_session_id: root },
    });
    return row;
  }

  private bump(root: string): void {
    this.generations.set(root, this.generation(root) + 1);
  }
}
