/**
 * @module card/pending
 * Cards: pending "may this call run?" questions (SPEC §5). Parking records and publishes a card in
 * one synchronous step to each of its surfaces (home, plus the root of its chain); it resolves by a
 * decision from a surface (authority.ts), by its TTL (`expired`), or is withdrawn when its turn ends
 * or is cancelled (`cancelled`). Cards are ephemeral and `user_only`: never stored in a conversation.
 */
import type { Bus, EventData } from "../bus/bus.ts";
import { Card } from "../bus/events.ts";
import type { Inflight, InflightTurn } from "../session/inflight.ts";
import { AirlockError, toAirlockError } from "../errors.ts";
import { newId } from "../ids.ts";
import type { Store } from "../store/store.ts";
import type { SessionRules } from "../store/session-rules.ts";
import { checkAuthority, tokensEqual, type Decision } from "./authority.ts";
import type { FileBinding } from "./bound-files.ts";
import { surfacesFor } from "./relay.ts";
import type { CardRow } from "../fleet/card-rows.ts";
import type { FleetNode } from "../fleet/node.ts";
import { verdictOf } from "../fleet/park.ts";
import type { TurnLeases } from "../fleet/turn-leases.ts";
import { answerCardRow } from "./row-answer.ts";
import { Expiry } from "./expiry.ts";
import { BoundedMap } from "../bounded.ts";
import { decidedOutcome, type CardOutcome, type DecisionFrom, type ResolveResult } from "./outcome.ts";

export type { CardOutcome, DecisionFrom, ResolveResult };

/** The card as published in `action_required` and listed by `GET /sessions/:id/actions` (SPEC §5): its schema is with the other events. */
export { Card };

export interface ParkInput {
  homeSessionId: string;
  turnId: string;
  callId: string;
  tool: string;
  arguments: unknown;
  inspector: string;
  reason: string;
  requiresUserProof: boolean;
  /** Seconds before the card expires (→ deny, `expired`). */
  ttlSeconds: number;
  /** The named files and their hashes (shown on the card and in the `card_parked` audit row). */
  files?: FileBinding[];
  /** The request id of the card this one replaces (its allow went stale). */
  replaces?: string;
  /** The turn's abort signal: aborting withdraws the card (`cancelled`). */
  signal?: AbortSignal;
  /** The rule "Allow for this session" adds (gate/rules/suggest.ts); without it the card refuses `allow_session`. */
  suggestedRule?: string;
  /** Why allowing will not help (gate/will-fail.ts): shown on the card as `will_fail`. */
  willFail?: string;
}

export interface CardsOptions {
  store: Store;
  bus: Bus;
  inflight: Inflight;
  /** The approver token (user proof), or a function reading it; null/empty = no allow on proof cards is possible. */
  approverToken: string | null | (() => string | null);
  /** Decided cards remembered for 409 answers (oldest forgotten first). Default 10,000. */
  decidedMemory?: number;
  /** Where `allow_session` stores the card's suggested rule; without it every `allow_session` is refused `session_rule_not_offered`. */
  sessionRules?: Pick<SessionRules, "add">;
  /**
   * Fleet mode (PostgreSQL storage, SPEC §5.8): every card is also a row parked under its turn's lease
   * (a turn with no lease held here parks nothing and is refused `lease_lost`); answers go through the row
   * (card/row-answer.ts, from any process); the local card ends when its row does, and an allow runs only
   * while the lease is still live; other processes' pending cards are listed from the node's feed.
   */
  fleet?: { node: FleetNode; turnLeases: TurnLeases };
}

/** Home sessions whose surfaces `Cards` keeps in memory before it forgets them all (they are read again on use). */
const SURFACES_MEMORY = 10_000;

interface PendingCard {
  base: Omit<Card, "surfaced_in">;
  /** Shared by every card of the same home (frozen; see `Cards.surfacesOf`). */
  surfaces: readonly string[];
  turnId: string;
  signal?: AbortSignal;
  onAbort?: () => void;
  settle: (o: CardOutcome) => void;
  /** Set while an accepted answer is being written (one answer at a time). */
  deciding?: boolean;
}

interface DecidedCard {
  surfaces: readonly string[];
  home: string;
  outcome: CardOutcome;
}

export class Cards {
  private pending = new Map<string, PendingCard>();
  private bySession = new Map<string, Set<string>>();
  /** The last `decidedMemory` decided cards (bounded.ts: the oldest forgotten in O(1)). */
  private readonly decided: BoundedMap<string, DecidedCard>;
  private readonly offRemoved: () => void;
  /**
   * The surfaces of each home session seen, frozen and shared by its cards. Parent links never change once
   * stored (store.ts `parentOf`) and sessions are never deleted, so a home's surfaces never go stale; the map
   * is emptied when it holds {@link SURFACES_MEMORY} homes.
   */
  private readonly surfacesByHome = new Map<string, readonly string[]>();
  /** One timer for every card's TTL (card/expiry.ts), not one per card. */
  private readonly expiry: Expiry;

  constructor(private readonly opts: CardsOptions) {
    this.decided = new BoundedMap(Math.max(0, Math.floor(opts.decidedMemory ?? 10_000)));
    this.offRemoved = opts.inflight.onRemoved((t) => this.withdrawTurn(t));
    this.expiry = new Expiry((id) => this.expire(id), (id) => this.pending.has(id));
  }

  /** A card's TTL ran out: fleet mode writes its row's expiry (the waker then ends it); otherwise it ends `expired` here. */
  private expire(requestId: string): void {
    if (this.opts.fleet) this.expireRow(requestId);
    else this.finish(requestId, { request_id: requestId, decision: "expired" }, "ttl");
  }

  /**
   * The surfaces of a card homed in `homeId` (card/relay.ts `surfacesFor`), read from the session graph once
   * per home and then served from memory.
   * @throws AirlockError `session_not_found` / `session_graph_invalid` from the graph (nothing is cached then).
   */
  private async surfacesOf(homeId: string): Promise<readonly string[]> {
    const known = this.surfacesByHome.get(homeId);
    if (known) return known;
    const read = await surfacesFor(this.opts.store, homeId);
    const meanwhile = this.surfacesByHome.get(homeId); // another park of the same home read them first
    if (meanwhile) return meanwhile;
    const surfaces = Object.freeze(read);
    if (this.surfacesByHome.size >= SURFACES_MEMORY) this.surfacesByHome.clear();
    this.surfacesByHome.set(homeId, surfaces);
    return surfaces;
  }

  /** Cards pending right now. */
  get size(): number {
    return this.pending.size;
  }

  /**
   * Parks a card and waits for its outcome. Recording (audit + index) and publishing
   * (`action_required` to each surface) happen in one synchronous step. Resolves — never rejects
   * for a decision — with `allow_once`, `allow_session`, `deny`, `expired` or `cancelled`.
   * @throws AirlockError from the session graph (`session_not_found`, `session_graph_invalid`) before anything is parked.
   */
  park(input: ParkInput): Promise<CardOutcome> {
    // one promise per card, resolved by the card's end; the async part below is done (and collectable) once
    // the card is parked, so a pending card holds no suspended frame or chained promise
    const { promise, resolve, reject } = Promise.withResolvers<CardOutcome>();
    this.record(input, resolve).catch(reject);
    return promise;
  }

  /** `park`'s work up to the card being pending: surfaces, the `card_parked` row (or fleet row), then {@link enlist}. */
  private async record(input: ParkInput, settle: (o: CardOutcome) => void): Promise<void> {
    const surfaces = this.surfacesByHome.get(input.homeSessionId) ?? (await this.surfacesOf(input.homeSessionId));
    const requestId = newId("act");
    const expiresAt = new Date(Date.now() + input.ttlSeconds * 1000);
    const base: Omit<Card, "surfaced_in"> = {
      request_id: requestId,
      home_session_id: input.homeSessionId,
      tool: input.tool,
      arguments: input.arguments,
      inspector: input.inspector,
      reason: input.reason,
      requires_user_proof: input.requiresUserProof,
      expires_at: expiresAt.toISOString(),
      user_only: true,
      ...(input.files?.length ? { files: input.files } : {}),
      ...(input.replaces ? { replaces: input.replaces } : {}),
      ...(input.suggestedRule && this.opts.sessionRules ? { suggested_rule: input.suggestedRule } : {}),
      ...(input.willFail ? { will_fail: input.willFail } : {}),
    };
    if (input.signal?.aborted) return settle({ request_id: requestId, decision: "cancelled" });
    const fleet = this.opts.fleet;
    if (fleet) {
      const lease = fleet.turnLeases.lease(input.turnId);
      if (!lease) throw new AirlockError("lease_lost", `turn ${input.turnId} holds no lease in this process: card ${requestId} was not parked and its call does not run`, { request_id: requestId });
      // the events that led to this card (turn_started, the tool_request…) are relayed first: a node that
      // publishes the card reads the relay up to it before (fleet/feed.ts), so no client sees a card before them
      await fleet.node.relay.flush();
      // the row and its card_parked audit row, in one transaction under the lease (throws lease_lost)
      await fleet.node.rows.park(lease, {
        id: requestId,
        sessionId: input.homeSessionId,
        rootSessionId: surfaces[surfaces.length - 1]!,
        callId: input.callId,
        surfaces,
        requiresUserProof: input.requiresUserProof,
        card: base,
        expiresAt: expiresAt.getTime(),
        auditDetail: {
          tool: input.tool,
          inspector: input.inspector,
          reason: input.reason,
          requires_user_proof: input.requiresUserProof,
          ...(input.files?.length ? { files: input.files } : {}),
          ...(input.replaces ? { replaces: input.replaces } : {}),
          ...(base.suggested_rule ? { suggested_rule: base.suggested_rule } : {}),
          ...(base.will_fail ? { will_fail: base.will_fail } : {}),
        },
      });
      // the row's end (from any process) ends the local card; an allow counts only under a live lease
      fleet.node.waker.wait(requestId).then(
        async (row) => this.finishFromRow(row, lease),
        () => undefined, // the waker closed (runtime shutdown): close() withdraws the card
      );
    } else await this.opts.store.audit({
      kind: "card_parked",
      outcome: "recorded",
      request_id: requestId,
      session_id: input.homeSessionId,
      home_session_id: input.homeSessionId,
      detail: {
        tool: input.tool,
        call_id: input.callId,
        turn_id: input.turnId,
        inspector: input.inspector,
        reason: input.reason,
        surfaces,
        requires_user_proof: input.requiresUserProof,
        ...(input.files?.length ? { files: input.files } : {}),
        ...(input.replaces ? { replaces: input.replaces } : {}),
        ...(base.suggested_rule ? { suggested_rule: base.suggested_rule } : {}),
        ...(base.will_fail ? { will_fail: base.will_fail } : {}),
      },
    });
    // parked in the log: from here on the card is either pending or closed by a card_decision row
    this.enlist(requestId, base, surfaces, input.turnId, input.ttlSeconds, input.signal, settle);
  }

  /**
   * Indexes and publishes a card whose `card_parked` row is written; `settle` gets its outcome. Kept apart from
   * `park` so a pending card holds only its record (no suspended frame with its input, no closure per card
   * unless it has a signal to listen to).
   */
  private enlist(requestId: string, base: Omit<Card, "surfaced_in">, surfaces: readonly string[], turnId: string, ttlSeconds: number, signal: AbortSignal | undefined, settle: (o: CardOutcome) => void): void {
    const rec: PendingCard = { base, surfaces, turnId, settle };
    if (signal) {
      rec.signal = signal;
      rec.onAbort = () => this.finish(requestId, { request_id: requestId, decision: "cancelled" }, "turn cancelled");
      signal.addEventListener("abort", rec.onAbort, { once: true });
    }
    // cancelled while its parked row was written: withdrawn at once (after it is indexed below)
    const abortedMeanwhile = signal?.aborted === true;
    this.pending.set(requestId, rec);
    // fleet mode: the row is the truth — its expiry is written there (no answer can win after it) and the
    // local card ends when the waker sees the row end; otherwise the card expires here
    this.expiry.add(requestId, ttlSeconds * 1000);
    for (const s of surfaces) {
      let set = this.bySession.get(s);
      if (!set) this.bySession.set(s, (set = new Set()));
      set.add(requestId);
    }
    for (const s of surfaces) this.opts.bus.publish(s, "action_required", { ...base, surfaced_in: s });
    if (abortedMeanwhile) rec.onAbort?.();
  }

  /**
   * Decides a card from a session. Errors (as results): `not_found` (unknown), `expired` (404),
   * `outside_scope` (403, not a surface), `already_decided` (409), `user_proof_required` (403),
   * `session_rule_not_offered` (409: `allow_session` on a card with no `suggested_rule`). An accepted
   * `allow_session` stores the card's suggested rule for the home's session tree (audited `session_rule_added`)
   * before the call is let run; the outcome then carries `rule` and `rule_id`.
   * Every attempt, accepted or refused, is written to the audit log (`card_decision`; `detail.proof`: whether it carried the valid approver token).
   */
  async resolve(requestId: string, decision: Decision, from: DecisionFrom): Promise<ResolveResult> {
    if (this.opts.fleet) {
      const token = this.opts.approverToken;
      return await answerCardRow(
        {
          sql: this.opts.store.sql,
          rows: this.opts.fleet.node.rows,
          approverToken: typeof token === "function" ? token() : token,
          ...(this.opts.sessionRules ? { sessionRules: this.opts.sessionRules } : {}),
        },
        requestId,
        decision,
        from,
      );
    }
    const rec = this.pending.get(requestId);
    const done = rec ? undefined : this.decided.get(requestId);
    const home = rec?.base.home_session_id ?? done?.home ?? null;
    if (!rec && !done) return this.refuse(requestId, decision, from, home, new AirlockError("not_found", `no card ${requestId}; list the cards you may answer with GET /sessions/${from.sessionId}/actions`));
    const surfaces = rec?.surfaces ?? done!.surfaces;
    const scope = checkAuthority({ requestId, surfaces, requiresUserProof: false, decision, fromSession: from.sessionId });
    if (scope) return this.refuse(requestId, decision, from, home, scope);
    if (done) {
      if (done.outcome.decision === "expired") return this.refuse(requestId, decision, from, home, new AirlockError("expired", `card ${requestId} expired before it was answered; the call was refused`));
      return this.refuse(requestId, decision, from, home, new AirlockError("already_decided", `card ${requestId} was already decided (${done.outcome.decision}); a card is answered once`));
    }
    const suggested = rec!.base.suggested_rule;
    if (decision === "allow_session" && (!suggested || !this.opts.sessionRules)) {
      return this.refuse(
        requestId,
        decision,
        from,
        home,
        new AirlockError(
          "session_rule_not_offered",
          `card ${requestId} offers no rule for the session (the security floor's, elevation's, a permission rule's or a hook's asks need an answer each time): answer it with allow_once or deny`,
          { request_id: requestId },
        ),
      );
    }
    const proof = checkAuthority({
      requestId,
      surfaces,
      requiresUserProof: rec!.base.requires_user_proof,
      decision,
      fromSession: from.sessionId,
      approverToken: from.approverToken ?? null,
      expectedApproverToken: this.expectedToken(),
    });
    if (proof) return this.refuse(requestId, decision, from, home, proof);
    // one answer at a time: while this one is written, another is refused as already decided
    if (rec!.deciding) return this.refuse(requestId, decision, from, home, new AirlockError("already_decided", `card ${requestId} is being decided by another answer; a card is answered once`));
    rec!.deciding = true;
    let stored: { rule: string; id: string } | undefined;
    if (decision === "allow_session") {
      try {
        stored = await this.opts.sessionRules!.add(rec!.base.home_session_id, suggested!, {
          request_id: requestId,
          added_in: from.sessionId,
          ...(from.actor ? { actor: from.actor } : {}),
          proof: this.hasProof(from),
        });
      } catch (e) {
        // the rule could not be stored (session graph, database): the card stays pending, nothing ran
        rec!.deciding = false;
        return this.refuse(requestId, decision, from, home, toAirlockError(e));
      }
    }
    try {
      await this.auditDecision(requestId, decision, from, home, "accepted");
    } catch (e) {
      rec!.deciding = false;
      throw e;
    }
    if (this.pending.get(requestId) !== rec) {
      // expired or withdrawn while the answer was written: the call was not let run
      return { ok: false, error: new AirlockError("expired", `card ${requestId} closed (${this.decided.get(requestId)?.outcome.decision ?? "withdrawn"}) before this answer was stored; the call was not run`) };
    }
    const outcome: CardOutcome = decidedOutcome(requestId, decision, from);
    if (stored) {
      outcome.rule = stored.rule;
      outcome.rule_id = stored.id;
    }
    this.finish(requestId, outcome);
    return { ok: true, outcome };
  }

  /** The approver token a proof must match now (null or empty: none can). */
  private expectedToken(): string | null {
    const token = this.opts.approverToken;
    return typeof token === "function" ? token() : token;
  }

  /** Whether an answer carried the valid approver token (the decision log's `detail.proof`). */
  private hasProof(from: DecisionFrom): boolean {
    return tokensEqual(from.approverToken ?? null, this.expectedToken());
  }

  /** The `card_decision` audit row of one answer to a card of this process (`home`: its home session, when known). */
  private auditDecision(requestId: string, decision: Decision, from: DecisionFrom, home: string | null, outcome: "accepted" | "refused", code?: string): Promise<void> {
    return this.opts.store.audit({
      kind: "card_decision",
      outcome,
      request_id: requestId,
      session_id: from.sessionId,
      home_session_id: home,
      decision,
      code: code ?? null,
      actor: from.actor ?? null,
      // proof: whether the attempt carried the valid approver token (the decision log shows it)
      detail: { proof: this.hasProof(from), ...(from.reason ? { reason: from.reason } : {}) },
    });
  }

  /** Writes the refused answer's audit row and returns the refusal. */
  private async refuse(requestId: string, decision: Decision, from: DecisionFrom, home: string | null, e: AirlockError): Promise<ResolveResult> {
    await this.auditDecision(requestId, decision, from, home, "refused", e.code);
    return { ok: false, error: e };
  }

  /**
   * The session a person answers `requestId` at when no session is named: the card's root surface, the one it
   * was relayed to (card/relay.ts; the home itself for a root session's card). Known for a pending card and a
   * remembered decided one (so a late answer gets `already_decided` or `expired`); undefined otherwise.
   */
  answerSurface(requestId: string): string | undefined {
    const surfaces = this.pending.get(requestId)?.surfaces ?? this.decided.get(requestId)?.surfaces;
    return surfaces?.[surfaces.length - 1];
  }

  /**
   * Decides a card at its root surface ({@link answerSurface}): {@link resolve} from that session, with the
   * same checks, results and audit rows. An unknown card is refused `not_found` (audited with no session).
   */
  async resolveAtSurface(requestId: string, decision: Decision, from: Omit<DecisionFrom, "sessionId">): Promise<ResolveResult> {
    let at = this.answerSurface(requestId);
    if (at === undefined && this.opts.fleet) at = (await this.opts.fleet.node.rows.get(requestId))?.surfaces.at(-1);
    if (at !== undefined) return this.resolve(requestId, decision, { ...from, sessionId: at });
    await this.opts.store.audit({
      kind: "card_decision",
      outcome: "refused",
      request_id: requestId,
      decision,
      code: "not_found",
      actor: from.actor ?? null,
      detail: { proof: tokensEqual(from.approverToken ?? null, typeof this.opts.approverToken === "function" ? this.opts.approverToken() : this.opts.approverToken), ...(from.reason ? { reason: from.reason } : {}) },
    });
    return { ok: false, error: new AirlockError("not_found", `no card ${requestId}; list the pending cards with GET /actions`) };
  }

  /** The pending cards homed or surfaced in `sessionId`, as seen there (`surfaced_in` = that session), oldest first. */
  listForSession(sessionId: string): Card[] {
    const ids = this.bySession.get(sessionId) ?? new Set<string>();
    const out: Card[] = this.remote().filter((r) => r.surfaces.includes(sessionId)).map((r) => ({ ...(r.card as Omit<Card, "surfaced_in">), surfaced_in: sessionId }));
    for (const id of ids) {
      const rec = this.pending.get(id);
      if (rec) out.push({ ...rec.base, surfaced_in: sessionId });
    }
    return out;
  }

  /** Every pending card, as seen at its home, oldest first. */
  listAll(): Card[] {
    const remote = this.remote().map((r) => ({ ...(r.card as Omit<Card, "surfaced_in">), surfaced_in: r.sessionId }));
    return [...remote, ...[...this.pending.values()].map((rec) => ({ ...rec.base, surfaced_in: rec.base.home_session_id }))];
  }

  /** Fleet mode: the pending cards of other processes, as this process's feed last read them (none otherwise). */
  private remote(): CardRow[] {
    return this.opts.fleet ? this.opts.fleet.node.feed.pendingRows().filter((r) => !this.pending.has(r.id)) : [];
  }

  /** A pending card by id (as seen at its home), or undefined. */
  get(requestId: string): Card | undefined {
    const rec = this.pending.get(requestId);
    if (rec) return { ...rec.base, surfaced_in: rec.base.home_session_id };
    const row = this.remote().find((r) => r.id === requestId);
    return row ? { ...(row.card as Omit<Card, "surfaced_in">), surfaced_in: row.sessionId } : undefined;
  }

  /** Withdraws (`cancelled`) every card raised by this turn. Called when the turn leaves the in-flight registry. */
  withdrawTurn(t: Pick<InflightTurn, "sessionId" | "turnId">): number {
    let n = 0;
    for (const id of [...(this.bySession.get(t.sessionId) ?? [])]) {
      const rec = this.pending.get(id);
      if (rec && rec.base.home_session_id === t.sessionId && rec.turnId === t.turnId) {
        this.finish(id, { request_id: id, decision: "cancelled" }, "turn ended");
        n++;
      }
    }
    return n;
  }

  /** Withdraws every pending card and stops listening to the in-flight registry. */
  close(): void {
    this.offRemoved();
    this.expiry.close();
    for (const id of [...this.pending.keys()]) this.finish(id, { request_id: id, decision: "cancelled" }, "runtime closed");
  }

  [Symbol.dispose](): void {
    this.close();
  }

  /**
   * Fleet mode: marks the row of `requestId` `expired` once its `expires_at` has passed on this clock (retried
   * every 50 ms while it is still pending, for at most 5 s); the waker then ends the local card. If the row
   * cannot be written, the card ends `expired` here (fail closed: nothing runs) and the waker's poll or the
   * sweeper ends the row.
   */
  private expireRow(requestId: string): void {
    const rows = this.opts.fleet!.node.rows;
    void (async () => {
      for (let i = 0; i < 100 && this.pending.has(requestId); i++) {
        if (await rows.expireIfDue(requestId)) return;
        const row = await rows.get(requestId);
        if (!row || row.status !== "pending") return;
        await Bun.sleep(50);
      }
      if (this.pending.has(requestId)) throw new Error("the row is still pending");
    })().catch((e: unknown) => {
      console.error(`airlock: expiring the row of card ${requestId} failed; the card is refused expired here:`, e);
      this.finish(requestId, { request_id: requestId, decision: "expired" }, "ttl");
    });
  }

  /** Fleet mode: ends the local card as its row ended (audited by the row's own transaction). */
  private async finishFromRow(row: CardRow, lease: { turnId: string; epoch: number; sessionId: string; workerId: string; expiresAt: number }): Promise<void> {
    if (!this.pending.has(row.id)) return;
    const v = await verdictOf(this.opts.fleet!.node.leases, lease, row);
    const d = row.decision ?? {};
    const outcome: CardOutcome = { request_id: row.id, decision: "cancelled" };
    if (v.run) outcome.decision = d.decision === "allow_session" ? "allow_session" : "allow_once";
    else if (row.status === "denied") outcome.decision = "deny";
    else if (row.status === "expired") outcome.decision = "expired";
    if (typeof d.decided_in === "string") outcome.decided_in = d.decided_in;
    if (typeof d.reason === "string") outcome.reason = d.reason;
    if (d.nobody === true && outcome.decision === "deny") outcome.nobody = true;
    if (typeof d.rule === "string") outcome.rule = d.rule;
    if (typeof d.rule_id === "string") outcome.rule_id = d.rule_id;
    this.finish(row.id, outcome, "row");
  }

  private finish(requestId: string, outcome: CardOutcome, why?: string): void {
    const rec = this.pending.get(requestId);
    if (!rec) return;
    this.pending.delete(requestId);
    // no card left: drop every entry and the timer, which would otherwise keep the process alive until the
    // earliest ended card's TTL (a per-card timer was cleared with its card)
    if (this.pending.size === 0) this.expiry.close();
    else this.expiry.forget();
    if (rec.signal && rec.onAbort) rec.signal.removeEventListener("abort", rec.onAbort);
    for (const s of rec.surfaces) {
      const set = this.bySession.get(s);
      if (set) {
        set.delete(requestId);
        if (set.size === 0) this.bySession.delete(s);
      }
    }
    this.decided.set(requestId, { surfaces: rec.surfaces, home: rec.base.home_session_id, outcome });
    const fleet = this.opts.fleet;
    if (fleet && why !== "row") {
      // ended here (TTL, turn ended, shutdown): end the row too, so no process can answer it any more
      fleet.node.waker.forget(requestId);
      const end = outcome.decision === "expired" ? fleet.node.rows.expireIfDue(requestId) : fleet.node.rows.cancel(requestId, why ?? "withdrawn");
      end.catch((e: unknown) => console.error(`airlock: ending the row of card ${requestId} failed (the sweeper ends it with its lease):`, e));
    }
    if ((outcome.decision === "expired" || outcome.decision === "cancelled") && !fleet) {
      this.opts.store
        .audit({
          kind: "card_decision",
          outcome: "recorded",
          request_id: requestId,
          home_session_id: rec.base.home_session_id,
          decision: outcome.decision,
          detail: why ? { why } : undefined,
        })
        .catch((e: unknown) => console.error(`airlock: the close of card ${requestId} could not be logged:`, e));
    }
    const ev: EventData<"action_resolved"> = { request_id: requestId, decision: outcome.decision };
    if (outcome.decided_in) ev.decided_in = outcome.decided_in;
    for (const s of rec.surfaces) this.opts.bus.publish(s, "action_resolved", ev);
    rec.settle(outcome);
  }
}
