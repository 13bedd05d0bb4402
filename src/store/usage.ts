/**
 * @module store/usage
 * Token usage per model call (issue 19), in the `model_calls` table (store/db.ts migration 8): one row per
 * model call that returned, with the tokens its provider reported (NULL where it reported none), and the
 * sums per turn, per session and per session subtree. A call whose provider reported no usage is counted
 * as `unreported_calls`, never as zero tokens.
 */
import { SESSION_TREE_CTE } from "./session-tree.ts";
import type { UsageSummary } from "../session/types.ts";
import type { Store } from "./store.ts";

/** The tokens of one model call as its provider reported them (agent/providers/provider.ts `TokenUsage`). */
export interface ModelCallUsage {
  input_tokens: number;
  output_tokens: number;
  cached_input_tokens?: number;
  cache_write_input_tokens?: number;
  reasoning_tokens?: number;
}

/** One model call to record. `usage` undefined: the provider did not report it. */
export interface ModelCallRecord {
  session_id: string;
  turn_id: string;
  provider: string;
  model?: string | null;
  usage?: ModelCallUsage;
}

interface SumRow {
  calls: number;
  reported: number;
  input: number | null;
  output: number | null;
  cached: number | null;
  cache_write: number | null;
  reasoning: number | null;
}

const SUMS = `COUNT(*) AS calls, COUNT(input_tokens) AS reported, SUM(input_tokens) AS input, SUM(output_tokens) AS output,
  SUM(cached_input_tokens) AS cached, SUM(cache_write_input_tokens) AS cache_write, SUM(reasoning_tokens) AS reasoning`;

/** Token usage of model calls, over the store's database. */
export class UsageLedger {
  constructor(private readonly store: Store) {}

  /** Stores one model call's usage (one row, also when the provider reported none). */
  async record(r: ModelCallRecord): Promise<void> {
    const u = r.usage;
    await this.store.sql.run(
      `INSERT INTO model_calls (session_id, turn_id, at, provider, model, input_tokens, output_tokens, cached_input_tokens, cache_write_input_tokens, reasoning_tokens)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [
        r.session_id,
        r.turn_id,
        new Date().toISOString(),
        r.provider,
        r.model ?? null,
        u ? u.input_tokens : null,
        u ? u.output_tokens : null,
        u?.cached_input_tokens ?? null,
        u?.cache_write_input_tokens ?? null,
        u?.reasoning_tokens ?? null,
      ],
    );
  }

  /** The summed usage of one turn's model calls; null when none reported usage. */
  async ofTurn(turnId: string): Promise<UsageSummary | null> {
    return summarise(await this.store.sql.get<SumRow>(`SELECT ${SUMS} FROM model_calls WHERE turn_id = ?`, [turnId]));
  }

  /** The summed usage of one session's model calls (all its turns); null when none reported usage. */
  async ofSession(sessionId: string): Promise<UsageSummary | null> {
    return summarise(await this.store.sql.get<SumRow>(`SELECT ${SUMS} FROM model_calls WHERE session_id = ?`, [sessionId]));
  }

  /** The summed usage of a session and every descendant (subagents at any depth); null when none reported usage. */
  async ofSubtree(sessionId: string): Promise<UsageSummary | null> {
    return summarise(
      await this.store.sql.get<SumRow>(
        `${SESSION_TREE_CTE}
           SELECT ${SUMS} FROM model_calls WHERE session_id IN (SELECT id FROM tree)`,
        [sessionId],
      ),
    );
  }
}

/**
 * A sum row as a {@link UsageSummary}: null when no call reported usage; an optional count (cached,
 * cache writes, reasoning) only when at least one call reported it; `unreported_calls` only when some
 * call reported nothing.
 */
function summarise(row: SumRow | null): UsageSummary | null {
  if (!row || row.reported === 0) return null;
  return {
    input_tokens: row.input ?? 0,
    output_tokens: row.output ?? 0,
    ...(row.cached !== null ? { cached_input_tokens: row.cached } : {}),
    ...(row.cache_write !== null ? { cache_write_input_tokens: row.cache_write } : {}),
    ...(row.reasoning !== null ? { reasoning_tokens: row.reasoning } : {}),
    model_calls: row.calls,
    ...(row.calls > row.reported ? { unreported_calls: row.calls - row.reported } : {}),
  };
}
