/**
 * @module notify/notifier
 * `notify:` (docs/notify.md): tells people about cards and runs wherever they are. Listens to the bus for
 * cards parked (`action_required`, once per card: on its root surface) and ended (`action_resolved`, once),
 * and is told by the run path (`runEnded`) when a run finished or was blocked; sends each event to every
 * notifier that asked for it — a command (notify/command.ts) or a webhook (notify/webhook.ts).
 * Never in the gate's way: the bus listener only builds the notification and queues it; deliveries run
 * later, on a queue per notifier (at most {@link CONCURRENCY} at once, {@link QUEUE_MAX} waiting), so a slow
 * or hanging receiver delays neither the gate nor another notifier. A failure is one log line and a count,
 * never fatal, never an answer to a card.
 */
import type { AnyEvent, Bus } from "../bus/bus.ts";
import type { Notifier, NotifyConfig, NotifyEventName } from "../config/schema.ts";
import { assertNever, toAirlockError } from "../errors.ts";
import { ancestors, sessionName, type ParentLookup } from "../session/graph.ts";
import type { Session } from "../session/types.ts";
import { runNotifyCommand, type CommandLaunch } from "./command.ts";
import { CHAIN_SEPARATOR, consoleLink, type Notification } from "./payload.ts";
import { deliverWebhook, type DeliveryOutcome } from "./webhook.ts";

export type { Notification };

/** Deliveries of one notifier running at once. */
export const CONCURRENCY = 4;
/** Events one notifier holds waiting; past it a new event is dropped (logged and counted as failed). */
export const QUEUE_MAX = 256;

/** What the notifier reads of the store: parent links and sessions (for chain labels). */
export interface NotifySessions extends ParentLookup {
  getSession(id: string): Promise<Session | null>;
}

/** Counts of one notifier since start: events delivered, events that failed (dropped ones included). */
export interface NotifierStats {
  name: string;
  sent: number;
  failed: number;
}

/** `GET /health`'s `notify` field: totals and one row per notifier, in config order. */
export interface NotifyStats {
  sent: number;
  failed: number;
  notifiers: NotifierStats[];
}

/** A finished run as `runEnded` takes it: the fields of the headless result object (SPEC §7) a notification uses. */
export interface RunEnd {
  session_id: string | null;
  status: "completed" | "failed" | "blocked" | "cancelled";
  error: { code: string; message: string } | null;
  tool_calls: number;
  refused_calls: readonly { tool: string; code: string; reason: string }[];
  duration_ms: number;
}

/** Where a run came from: a scheduled run's ids, and what it was asked. */
export interface RunOrigin {
  run_id?: string;
  schedule_id?: string;
  schedule_name?: string;
  title?: string;
}

export interface NotificationsOptions {
  config: Readonly<NotifyConfig>;
  bus: Bus;
  store: NotifySessions;
  /** One line per failure (no newline). */
  log: (line: string) => void;
  /** The console's URL until the server says where it listens (`setServerUrl`): `http://<server.host>:<server.port>`. */
  defaultConsoleUrl: string;
  /** How commands run (cwd, data dir, `allow_unenforced`). */
  command: CommandLaunch;
  /** Where `url_env` and `headers_env` are read; default `process.env`. */
  env?: Record<string, string | undefined>;
}

interface Slot {
  cfg: Notifier;
  stats: NotifierStats;
  queue: Notification[];
  running: number;
}

interface CardSeen {
  home: string;
  root: string;
  chain: string[];
  tool: string;
  /** The home is a `private` session: no text from its conversation leaves in a notification. */
  private: boolean;
}

/** The reason a private session's card notification carries instead of the real one. */
export const PRIVATE_REASON = "(a private session: the reason is shown in the console)";

/**
 * The notifiers of one runtime. Disposable: `close()` waits for deliveries under way (each bounded by its
 * notifier's `timeout_s`), drops what still waits, and stops listening.
 */
export class Notifications {
  private readonly slots: Slot[];
  private readonly cards = new Map<string, CardSeen>();
  /** Cards whose chain is being read (copies per card); an `action_resolved` that comes meanwhile waits in `resolvedEarly`. */
  private readonly reading = new Map<string, number>();
  private readonly resolvedEarly = new Map<string, AnyEvent>();
  private readonly off: () => void;
  private readonly stop = new AbortController();
  private readonly inFlight = new Set<Promise<void>>();
  private serverUrl: string | null = null;
  private closed = false;

  constructor(private readonly opts: NotificationsOptions) {
    this.slots = opts.config.notifiers.map((cfg, i) => ({ cfg, stats: { name: cfg.name ?? `notify[${i}]`, sent: 0, failed: 0 }, queue: [], running: 0 }));
    const wantsCards = this.slots.some((s) => s.cfg.on.includes("card_parked") || s.cfg.on.includes("card_resolved"));
    this.off = wantsCards ? opts.bus.subscribeAll((ev) => this.onBusEvent(ev)) : () => {};
  }

  /** Whether any notifier is configured. */
  get enabled(): boolean {
    return this.slots.length > 0;
  }

  /** The server's own URL (`http://HOST:PORT`), used in links when `notify.console_url` is not set. */
  setServerUrl(url: string): void {
    this.serverUrl = url;
  }

  /** The base of console links: `notify.console_url`, else the server's URL, else the configured host and port. */
  consoleUrl(): string {
    return this.opts.config.console_url ?? this.serverUrl ?? this.opts.defaultConsoleUrl;
  }

  /** Counts since start (a snapshot). */
  stats(): NotifyStats {
    const notifiers = this.slots.map((s) => ({ ...s.stats }));
    return { sent: notifiers.reduce((a, s) => a + s.sent, 0), failed: notifiers.reduce((a, s) => a + s.failed, 0), notifiers };
  }

  /**
   * A run ended: sends `run_blocked` when its status is `blocked`, else `run_finished`. Returns at once;
   * delivery is asynchronous. `origin`: a scheduled run's ids and the run's prompt.
   */
  runEnded(run: RunEnd, origin: RunOrigin = {}): void {
    if (!this.enabled || this.stop.signal.aborted) return;
    const read = run.session_id !== null ? this.opts.store.getSession(run.session_id) : Promise.resolve(null);
    // counted as under way until queued, so idle() and close() wait for it (a run's last notification is
    // not lost to a close that comes before its session is read)
    const p: Promise<void> = read
      .then(
        (s) => this.runEndedOf(run, origin, s, true),
        // the session cannot be read: treated as private (nothing of its prompt leaves)
        () => this.runEndedOf(run, origin, { privacy: "private" }, true),
      )
      .finally(() => this.inFlight.delete(p));
    this.inFlight.add(p);
  }

  private runEndedOf(run: RunEnd, origin: RunOrigin, session: Pick<Session, "privacy"> | null, accepted = false): void {
    // an event accepted before close() began is still queued (close() waits for it, then counts what it cannot send)
    if (this.stop.signal.aborted && !accepted) return;
    // a private run's prompt and refusal reasons stay out of notifications (open the console)
    const priv = run.session_id !== null && session?.privacy === "private";
    const n: Notification = {
      event: run.status === "blocked" ? "run_blocked" : "run_finished",
      at: new Date().toISOString(),
      session_id: run.session_id,
      status: run.status,
      ...(origin.run_id ? { run_id: origin.run_id } : {}),
      ...(origin.schedule_id ? { schedule_id: origin.schedule_id } : {}),
      ...(origin.schedule_name ? { schedule_name: origin.schedule_name } : {}),
      ...(origin.title && !priv ? { title: origin.title.slice(0, 200) } : {}),
      error: run.error ? { code: run.error.code, message: run.error.message } : null,
      tool_calls: run.tool_calls,
      refused_calls: run.refused_calls.map((r) => ({ tool: r.tool, code: r.code, reason: priv ? PRIVATE_REASON : r.reason })),
      duration_ms: run.duration_ms,
      ...(run.session_id ? { url: consoleLink(this.consoleUrl(), run.session_id) } : {}),
    };
    this.dispatch(n);
  }

  /** Resolves when no delivery is queued or running (tests and benchmarks wait on it). */
  async idle(): Promise<void> {
    for (;;) {
      if (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
      else if (!this.stop.signal.aborted && this.slots.some((s) => s.queue.length > 0)) await new Promise((r) => setImmediate(r));
      else return;
    }
  }

  /**
   * Stops listening, then lets what is queued and under way finish — a run's last notification is sent before
   * `airlock run` exits — for at most the longest `timeout_s` of the notifiers (plus 1 s); then stops every
   * delivery still going (commands killed, requests aborted) and counts the events left as failed.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.off();
    if (this.slots.length === 0) return;
    const graceMs = Math.max(...this.slots.map((s) => s.cfg.timeout_s)) * 1000 + 1000;
    for (const s of this.slots) this.pump(s);
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([this.idle(), new Promise((r) => (timer = setTimeout(r, graceMs)))]);
    clearTimeout(timer);
    this.stop.abort();
    for (const s of this.slots) {
      for (const n of s.queue.splice(0)) this.failed(s, n, "airlock shut down before it was sent");
    }
    await this.idle();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  /** The bus listener: builds card notifications, once per card. Runs inside `publish`: cheap, never throws out. */
  private onBusEvent(ev: AnyEvent): void {
    if (this.stop.signal.aborted) return;
    switch (ev.type) {
      case "action_required": {
        const card = ev.data;
        if (this.cards.has(card.request_id)) return;
        // the chain is read from the store (asynchronously): a card resolved meanwhile is told parked, then resolved
        this.reading.set(card.request_id, (this.reading.get(card.request_id) ?? 0) + 1);
        void this.chainOf(card.home_session_id, card.tool).then((seen) => {
          const left = (this.reading.get(card.request_id) ?? 1) - 1;
          if (left > 0) this.reading.set(card.request_id, left);
          else this.reading.delete(card.request_id);
          // a subagent's card is published on its home and its root: notify once, from the root's copy
          if (card.surfaced_in === seen.root && !this.cards.has(card.request_id) && !this.stop.signal.aborted) {
            this.cards.set(card.request_id, seen);
            this.dispatch({
              event: "card_parked",
              at: new Date().toISOString(),
              request_id: card.request_id,
              session_id: seen.home,
              root_session_id: seen.root,
              chain: seen.chain,
              chain_label: seen.chain.join(CHAIN_SEPARATOR),
              tool: card.tool,
              inspector: card.inspector,
              reason: seen.private ? PRIVATE_REASON : card.reason,
              requires_user_proof: card.requires_user_proof,
              expires_at: card.expires_at,
              url: consoleLink(this.consoleUrl(), seen.root, card.request_id),
            });
          }
          const resolved = this.resolvedEarly.get(card.request_id);
          if (resolved && !this.reading.has(card.request_id)) {
            this.resolvedEarly.delete(card.request_id);
            this.onBusEvent(resolved);
          }
        });
        return;
      }
      case "action_resolved": {
        if (this.reading.has(ev.data.request_id)) {
          this.resolvedEarly.set(ev.data.request_id, ev);
          return;
        }
        const seen = this.cards.get(ev.data.request_id);
        if (!seen) return; // not a card this notifier saw park, or already told
        this.cards.delete(ev.data.request_id);
        this.dispatch({
          event: "card_resolved",
          at: new Date().toISOString(),
          request_id: ev.data.request_id,
          session_id: seen.home,
          root_session_id: seen.root,
          chain: seen.chain,
          chain_label: seen.chain.join(CHAIN_SEPARATOR),
          tool: seen.tool,
          decision: ev.data.decision,
          ...(ev.data.decided_in ? { decided_in: ev.data.decided_in } : {}),
          url: consoleLink(this.consoleUrl(), seen.root, ev.data.request_id),
        });
        return;
      }
      case "turn_started":
      case "delta":
      case "message":
      case "tool_request":
      case "tool_result":
      case "turn_finished":
      case "error":
      case "hook_message":
        return;
      default:
        assertNever(ev, "bus event");
    }
  }

  /**
   * The chain of a card's home, root first, with its names; the home alone when the stored graph cannot be
   * read. For a private session (or an unknown one) the names are `root` / `subagent#N` only: a title may be
   * the run's prompt.
   */
  private async chainOf(home: string, tool: string): Promise<CardSeen> {
    let ids: string[];
    try {
      ids = [...(await ancestors(this.opts.store, home))].reverse().concat(home);
    } catch {
      ids = [home];
    }
    const sessions = await Promise.all(ids.map((id) => this.opts.store.getSession(id).catch(() => null)));
    const priv = sessions.some((x) => !x || x.privacy === "private");
    const chain = sessions.map((x, i) => sessionName(x && priv ? { ...x, title: null } : x, ids[i]!));
    return { home, root: ids[0]!, chain, tool, private: priv };
  }

  private dispatch(n: Notification): void {
    const event: NotifyEventName = n.event;
    for (const slot of this.slots) {
      if (!slot.cfg.on.includes(event)) continue;
      if (this.stop.signal.aborted) {
        this.failed(slot, n, "airlock shut down before it was sent");
        continue;
      }
      if (slot.queue.length >= QUEUE_MAX) {
        this.failed(slot, n, `${QUEUE_MAX} events already wait for it; this one was dropped`);
        continue;
      }
      slot.queue.push(n);
      // start on a later turn of the event loop: the publisher (the gate parking a card) is never held up
      setImmediate(() => this.pump(slot));
    }
  }

  private pump(slot: Slot): void {
    while (slot.running < CONCURRENCY && slot.queue.length > 0 && !this.stop.signal.aborted) {
      const n = slot.queue.shift()!;
      slot.running++;
      const p: Promise<void> = this.deliver(slot, n)
        .then((o) => {
          if (o.ok) slot.stats.sent++;
          else this.failed(slot, n, o.why);
        })
        .catch((e) => this.failed(slot, n, toAirlockError(e).message))
        .finally(() => {
          slot.running--;
          this.inFlight.delete(p);
          this.pump(slot);
        });
      this.inFlight.add(p);
    }
  }

  private deliver(slot: Slot, n: Notification): Promise<DeliveryOutcome> {
    const timeoutMs = slot.cfg.timeout_s * 1000;
    if (slot.cfg.command !== undefined) {
      return runNotifyCommand(slot.cfg.command, n, timeoutMs, this.opts.command, this.stop.signal);
    }
    if (slot.cfg.webhook !== undefined) return deliverWebhook(slot.cfg.webhook, n, timeoutMs, this.opts.env ?? process.env, this.stop.signal);
    return Promise.resolve({ ok: false, attempts: 0, why: "it has neither a command nor a webhook" });
  }

  private failed(slot: Slot, n: Notification, why: string): void {
    slot.stats.failed++;
    const what = "request_id" in n ? `${n.event} ${n.request_id}` : `${n.event}${n.session_id ? ` ${n.session_id}` : ""}`;
    this.opts.log(`airlock: notify ${JSON.stringify(slot.stats.name)} could not send ${what}: ${why}`);
  }
}
