/**
 * @module agent/usage
 * Token accounting for the agent loop (issue 19): every model call's usage is stored (store/usage.ts),
 * and a run's `limits.max_tokens_per_run` is enforced across its whole session tree (root and every
 * subagent, input + output tokens): the call that crosses it fails its turn with `token_budget`, and
 * the run's other running turns are stopped with the same error.
 */
import { AirlockError } from "../errors.ts";
import { rootOf, type ParentLookup } from "../session/graph.ts";
import type { Inflight } from "../session/inflight.ts";
import type { Session, UsageSummary } from "../session/types.ts";
import type { UsageLedger } from "../store/usage.ts";
import type { UsagePort } from "./loop.ts";
import type { TokenUsage } from "./providers/provider.ts";

interface Budget {
  /** `limits.max_tokens_per_run`: input + output tokens. */
  limit: number;
  /** Input + output tokens the run's model calls reported so far. */
  used: number;
  /** Set once the run crossed its limit: every later model call of the run fails with it. */
  over?: AirlockError;
}

/** The loop's {@link UsagePort}: stores usage and holds the runs' token budgets, keyed by the run's root session. */
export class UsageMeter implements UsagePort {
  private readonly budgets = new Map<string, Budget>();

  constructor(private readonly deps: { ledger: UsageLedger; sessions: ParentLookup; inflight: Inflight }) {}

  /**
   * Limits the run rooted at `rootSessionId` to `maxTokens` input + output tokens over every model call
   * of its tree from now on. A provider that reports no usage is not counted (it cannot be held to a budget).
   */
  setBudget(rootSessionId: string, maxTokens: number): void {
    this.budgets.set(rootSessionId, { limit: maxTokens, used: 0 });
  }

  /** Ends the run's budget (the run is over). */
  clearBudget(rootSessionId: string): void {
    this.budgets.delete(rootSessionId);
  }

  async beforeModelCall(session: Session): Promise<void> {
    const over = (await this.budgetOf(session.id))?.budget.over;
    if (over) throw over;
  }

  async afterModelCall(call: { session: Session; turnId: string; provider: string; model: string | null; usage: TokenUsage | undefined }): Promise<AirlockError | null> {
    const { session, usage } = call;
    await this.deps.ledger.record({ session_id: session.id, turn_id: call.turnId, provider: call.provider, model: call.model, ...(usage ? { usage } : {}) });
    const found = await this.budgetOf(session.id);
    if (!found) return null;
    const { root, budget } = found;
    if (usage) budget.used += usage.input_tokens + usage.output_tokens;
    if (budget.over) return budget.over;
    if (budget.used <= budget.limit) return null;
    budget.over = new AirlockError(
      "token_budget",
      `the run used ${budget.used} tokens (input + output, root and subagents), over limits.max_tokens_per_run (${budget.limit}); raise the limit or give the run a narrower task`,
      { used: budget.used, limit: budget.limit },
    );
    // the run's other turns (the parent waiting on this subagent, background siblings) stop now too
    for (const sid of this.deps.inflight.sessions()) {
      if (sid === session.id) continue;
      let r: string | null;
      try {
        r = await rootOf(this.deps.sessions, sid);
      } catch {
        r = null;
      }
      if (r === root) this.deps.inflight.get(sid)?.controller.abort(budget.over);
    }
    return budget.over;
  }

  async turnUsage(turnId: string): Promise<UsageSummary | null> {
    return this.deps.ledger.ofTurn(turnId);
  }

  /** The budget of the run `sessionId` belongs to, if that run has one. */
  private async budgetOf(sessionId: string): Promise<{ root: string; budget: Budget } | null> {
    if (this.budgets.size === 0) return null;
    let root: string;
    try {
      root = await rootOf(this.deps.sessions, sessionId);
    } catch {
      return null;
    }
    const budget = this.budgets.get(root);
    return budget ? { root, budget } : null;
  }
}
