/**
 * @module cli/attach
 * `airlock attach [SESSION]`: follows a session tree of a running `airlock serve` from the terminal (one
 * line per event, labelled with the agent chain) and answers its cards. In a terminal a card is a framed
 * block that rings the bell, drops type-ahead and arms after {@link ARM_MS} before one key decides it; with
 * `--plain` (or when stdin is not a terminal) decisions are lines on stdin (`y <id>`, `n <id> [reason]`,
 * `a <id>`). The streams come from cli/attach-follow.ts, the lines from cli/attach-format.ts. docs/attach.md.
 */
import { join } from "node:path";
import { createInterface } from "node:readline";
import type { ActionResolved } from "../bus/events.ts";
import { APPROVER_TOKEN_FILE, readTokenIfUsable } from "../config/paths.ts";
import type { ConsoleCard } from "../console/routes.ts";
import { AirlockError, assertNever } from "../errors.ts";
import { cardBlock, chainLabel, colorsFor, eventText, OUTCOME, type Colors } from "./attach-format.ts";
import { follow, readSse, type Follower } from "./attach-follow.ts";
import { safe, writeAll, writeStderr } from "./output.ts";
import type { ServerClient, ServerClientOptions } from "./server-client.ts";
import { ARM_MS, terminalFlusher } from "./terminal-arm.ts";


/** Options of `airlock attach`. */
export interface AttachOptions extends ServerClientOptions {
  /** `--plain`: no raw terminal, no colours; decisions are lines on stdin. */
  plain?: boolean;
  /** `--notify`: also send OSC 9 (a desktop notification in terminals that support it) with each card's bell. */
  notify?: boolean;
  /** `--exit-when-idle`: detach (exit 0) once the tree has no running turn and no pending card. */
  exitWhenIdle?: boolean;
}

type Decision = "allow_once" | "allow_session" | "deny";

/** The BEL byte rung for every card (also with `--plain`: tests and `tmux` bell monitoring look for it). */
export const BEL = "\x07";

/**
 * Picks the session `attach` follows when none is named: the newest root session (by the feed's order, newest
 * first) with a running turn or a pending card anywhere in its tree. Reads the console feed's snapshot.
 * @returns the session id, or null when no root has either.
 * @throws AirlockError from the server (401 …); a plain Error when the connection fails.
 */
export async function pickSession(base: string, apiToken: string): Promise<string | null> {
  const ac = new AbortController();
  let snap: Record<string, any> | null = null;
  await readSse(`${base}/console/events`, { authorization: `Bearer ${apiToken}` }, ac.signal, (m) => {
    if (m.event === "snapshot" && !snap) {
      snap = m.data ?? {};
      ac.abort();
    }
  });
  if (!snap) return null;
  const s = snap as Record<string, any>;
  const sessions = (s.sessions ?? []) as Record<string, any>[];
  const parent = new Map<string, string | null>(sessions.map((x) => [x.id, x.parent_session_id ?? null]));
  const rootOf = (id: string): string => {
    let cur = id;
    for (let n = 0; n < 64; n++) {
      const p = parent.get(cur);
      if (!p) return cur;
      cur = p;
    }
    return cur;
  };
  const busy = new Set<string>();
  for (const id of s.in_flight ?? []) busy.add(rootOf(id));
  for (const c of (s.pending_actions ?? []) as ConsoleCard[]) busy.add(c.chain?.[0]?.id ?? rootOf(c.home_session_id));
  for (const x of sessions) if (!x.parent_session_id && busy.has(x.id)) return x.id as string;
  return [...busy][0] ?? null;
}

/**
 * Attaches to a session tree until the person detaches (`q`, Ctrl-C, SIGINT/SIGTERM; the session keeps
 * running) or, with `--exit-when-idle`, the tree goes idle. Output is on stdout; the cards are answered
 * at their root (`answer_in`), with the approver token from the data dir on an allow (asked for, hidden,
 * when it is unreadable or refused, in a terminal).
 * @returns 0 after detaching.
 * @throws AirlockError `session_not_found` when SESSION is unknown, or when none is named and no root
 *   session has a running turn or a pending card; `session_busy` when the session's turn runs in another
 *   process (an `airlock run`: its events and cards are not on the server); `server_unreachable` when nothing answers at the URL;
 *   `unauthorized` when the API token is refused.
 */
export async function attach(sessionArg: string | undefined, opts: AttachOptions, env: Record<string, string | undefined> = process.env): Promise<number> {
  const { connect } = await import("./server-client.ts");
  const { ensureTokens } = await import("../config/paths.ts");
  const client = await connect(opts, env);
  const apiToken = ensureTokens(client.dataDir).apiToken;
  let target = sessionArg;
  if (!target) {
    let picked: string | null;
    // (pickSession sends the token: the same check as every request of the client)
    await client.ensureSendable();
    try {
      picked = await pickSession(client.base, apiToken);
    } catch (e) {
      if (e instanceof AirlockError) throw e;
      await client.call("GET", "/health"); // throws the CLI's server_unreachable with its advice
      throw e;
    }
    if (!picked) {
      throw new AirlockError(
        "session_not_found",
        `no root session on ${client.base} has a running turn or a pending card, so there is nothing to attach to; name one: airlock attach SESSION (airlock sessions list shows them). A turn that an \`airlock run\` runs is not on the server: that run's terminal answers its cards`,
      );
    }
    target = picked;
  }
  const session = await client.send("GET", `/sessions/${encodeURIComponent(target)}`, {
    hint: (r) => (r.status === 404 ? "list the sessions with: airlock sessions list" : undefined),
  });
  const elsewhere = session.turn_elsewhere as { turn_id: string; pid: number } | null | undefined;
  if (elsewhere) {
    throw new AirlockError(
      "session_busy",
      `the turn of session ${target} runs in another process, pid ${elsewhere.pid} (an \`airlock run\`, whose terminal answers its cards), not in the airlock serve at ${client.base}: its events and cards are that process's own, so attach cannot show them; attach can only follow sessions whose turn airlock serve runs`,
    );
  }
  const tty = !opts.plain && Boolean(process.stdin.isTTY && process.stdout.isTTY);
  if (!opts.plain && !tty) writeStderr("airlock: stdin or stdout is not a terminal: attaching with --plain (decisions as lines: y ID | n ID [reason] | a ID)\n");
  const ui = new AttachUi(client, {
    tty,
    colors: colorsFor({ tty: Boolean(process.stdout.isTTY), plain: !tty, env }),
    notify: Boolean(opts.notify),
    exitWhenIdle: Boolean(opts.exitWhenIdle),
    target,
    apiToken,
  });
  return ui.run(session);
}

interface UiOptions {
  tty: boolean;
  colors: Colors;
  notify: boolean;
  exitWhenIdle: boolean;
  target: string;
  apiToken: string;
}

/** What the keys do now, in a terminal. */
type KeyMode =
  | { kind: "idle" }
  | { kind: "card"; armedAt: number; armed: boolean }
  | { kind: "reason"; buf: string }
  | { kind: "token"; buf: string; then: Decision }
  | { kind: "busy" }
  /** The shown card ended (or was shown again) while a reason or token was typed: keys are dropped until Enter or Esc. */
  | { kind: "interrupted" };

/** One attach: the card queue, the prompt, and the input (keys in a terminal, lines with --plain). */
class AttachUi {
  private readonly c: Colors;
  /** Pending cards of the tree, oldest first (the shown one included). */
  private queue: ConsoleCard[] = [];
  /** The card shown in a terminal, waiting for a key. */
  private current: ConsoleCard | null = null;
  /** Cards skipped with `s` (still pending; shown again with `r` or after the others). */
  private readonly skipped = new Set<string>();
  /** Cards this attach answered (its own answer is not "decided elsewhere"). */
  private readonly mine = new Set<string>();
  private mode: KeyMode = { kind: "idle" };
  private prompt: string | null = null;
  private approver: string | null;
  private reconnected = false;
  private follower!: Follower;
  private finish!: (code: number) => void;
  private armTimer: ReturnType<typeof setTimeout> | undefined;
  /** Drops unread terminal input (set up by `startKeys`). */
  private flushInput: () => void = () => {};

  constructor(
    private readonly client: ServerClient,
    private readonly o: UiOptions,
  ) {
    this.c = o.colors;
    this.approver = readTokenIfUsable(join(client.dataDir, APPROVER_TOKEN_FILE));
  }

  /** Writes to stdout synchronously. */
  private out(text: string): void {
    writeAll(1, text);
  }

  /** Prints one line, above the prompt when one is shown (the prompt is redrawn under it). */
  private line(text: string): void {
    if (this.o.tty && this.prompt !== null) this.out(`\r\x1b[2K${text}\n${this.prompt}`);
    else this.out(`${text}\n`);
  }

  /** Shows (or clears, with null) the prompt line under the log. */
  private setPrompt(text: string | null): void {
    if (!this.o.tty) return;
    if (this.prompt !== null) this.out("\r\x1b[2K");
    this.prompt = text;
    if (text !== null) this.out(text);
  }

  private width(): number {
    return this.o.tty ? Math.max(40, (process.stdout.columns || 120) - 30) : 200;
  }

  private label(card: ConsoleCard): string {
    return chainLabel(this.c, card.chain ?? [{ id: card.home_session_id, name: card.home_session_id }]);
  }

  async run(session: Record<string, any>): Promise<number> {
    const exited = new Promise<number>((r) => (this.finish = r));
    const name = safe(String(session.title || "")) || (session.parent_session_id ? `subagent#${session.spawn_index ?? "?"}` : "root");
    // printed once the streams are open and the first snapshot is in: what happens after it is shown
    this.attachedLine = this.o.tty
      ? `attached to ${this.c.bold(name)} ${session.id} on ${this.client.base} (q or Ctrl-C detaches${session.in_flight ? "; the session keeps running" : ""})`
      : `attached to ${name} ${session.id} on ${this.client.base}; answer a card with: y ID | n ID [reason] | a ID; q detaches`;
    if (this.o.tty) this.flushInput = await terminalFlusher(0);
    const stopInput = this.o.tty ? this.startKeys() : this.startLines();
    const onSignal = (): void => this.detach();
    process.on("SIGINT", onSignal);
    process.on("SIGTERM", onSignal);
    this.follower = follow({
      server: this.client,
      apiToken: this.o.apiToken,
      target: this.o.target,
      sink: {
        event: (ev, chain) => {
          const t = eventText(this.c, ev, this.width());
          if (t !== null) this.line(`${chainLabel(this.c, chain)} ${t}`);
        },
        resync: (cards) => this.resync(cards),
        card: (card) => this.arrive(card),
        resolved: (r) => this.resolved(r),
        connection: (state, detail) => {
          if (state === "back") this.reconnected = true;
          switch (state) {
            case "lost":
              return this.line(this.c.red(`airlock: ${detail}`));
            case "moved":
            case "refused":
              return this.line(this.c.yellow(`airlock: ${detail}`));
            case "back":
              return this.line(this.c.green(`airlock: ${detail}`));
            default:
              return assertNever(state);
          }
        },
        activity: () => this.checkIdle(),
      },
    });
    this.follower.done.then(
      () => this.finish(0),
      (e) => {
        this.setPrompt(null);
        stopInput();
        process.off("SIGINT", onSignal);
        process.off("SIGTERM", onSignal);
        this.failed = e;
        this.finish(-1);
      },
    );
    const code = await exited;
    this.follower.stop();
    clearTimeout(this.armTimer);
    stopInput();
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
    if (code === -1) throw this.failed;
    return code;
  }

  private failed: unknown;
  private attachedLine: string | null = null;

  /** Ends the attach (a running turn of the tree keeps running). */
  private detach(): void {
    this.setPrompt(null);
    this.line(this.follower?.running().size ? "detached; the session keeps running" : "detached");
    this.finish(0);
  }

  private checkIdle(): void {
    if (this.o.exitWhenIdle && this.follower?.synced() && this.follower.running().size === 0 && this.queue.length === 0) {
      this.setPrompt(null);
      this.line("idle: no running turn and no pending card; detaching");
      this.finish(0);
    }
  }

  // ---- cards ----------------------------------------------------------------------------------

  /** A fresh snapshot: the pending cards are exactly `cards`; the others are dropped. */
  private resync(cards: ConsoleCard[]): void {
    if (this.attachedLine !== null) {
      this.line(this.attachedLine);
      this.attachedLine = null;
    }
    const again = this.reconnected;
    this.reconnected = false;
    const now = new Set(cards.map((c) => c.request_id));
    const before = new Set(this.queue.map((c) => c.request_id));
    for (const c of this.queue) if (!now.has(c.request_id)) this.line(`${this.label(c)} ${safe(c.tool)}: card ${c.request_id} is no longer pending (dropped)`);
    this.queue = [...cards];
    for (const id of [...this.skipped]) if (!now.has(id)) this.skipped.delete(id);
    if (!this.o.tty) {
      for (const c of cards) if (again || !before.has(c.request_id)) this.showPlain(c);
    } else if (this.current && (again || !now.has(this.current.request_id))) this.dropShown();
    else this.showNext();
    this.checkIdle();
  }

  /** A card parked in the tree. */
  private arrive(card: ConsoleCard): void {
    if (this.queue.some((c) => c.request_id === card.request_id)) return;
    this.queue.push(card);
    if (!this.o.tty) return this.showPlain(card);
    if (this.current) {
      this.line(`${this.label(card)} ${safe(card.tool)}: card ${card.request_id} waits (${this.queue.length - 1} more pending)`);
      this.out(BEL);
    } else this.showNext();
  }

  /** A card ended somewhere. */
  private resolved(r: ActionResolved): void {
    const card = this.queue.find((c) => c.request_id === r.request_id);
    if (!card) return;
    this.queue = this.queue.filter((c) => c.request_id !== r.request_id);
    this.skipped.delete(r.request_id);
    if (!this.mine.has(r.request_id)) {
      const what = r.decision === "expired" || r.decision === "cancelled" ? OUTCOME[r.decision] : `decided elsewhere: ${OUTCOME[r.decision]}${r.decided_in ? ` in ${safe(r.decided_in)}` : ""}`;
      this.line(`${this.label(card)} ${safe(card.tool)}: card ${card.request_id} ${what}`);
    }
    if (this.current?.request_id === r.request_id) this.dropShown();
    this.checkIdle();
  }

  /** --plain: prints the card's block, its answer line, and rings the bell. */
  private showPlain(card: ConsoleCard): void {
    const more = this.queue.length - 1 - this.queue.findIndex((c) => c.request_id === card.request_id);
    const block = cardBlock(this.c, card, { maxArgLines: Infinity, now: Date.now(), morePending: Math.max(0, more), tokenMissing: card.requires_user_proof && !this.approver });
    this.ring(card);
    for (const l of block) this.line(l);
    this.line(`answer: y ${card.request_id} | n ${card.request_id} [reason]${card.suggested_rule ? ` | a ${card.request_id}` : ""}`);
  }

  /** Rings for a card: BEL, and with `--notify` an OSC 9 desktop notification naming the tool and the chain. */
  private ring(card: ConsoleCard): void {
    const chain = safe(card.chain?.map((l) => l.name).join("›") ?? card.home_session_id);
    this.out(BEL + (this.o.notify ? `\x1b]9;airlock: ${safe(card.tool)} waits for you (${chain})\x07` : ""));
  }

  /** Stops showing the current card (decided, dropped, skipped). */
  private hide(): void {
    clearTimeout(this.armTimer);
    this.current = null;
    this.mode = { kind: "idle" };
    this.setPrompt(null);
  }

  /**
   * The shown card ended, or must be shown again (a reconnect). When the person is typing a reason or a
   * token, the rest of that line must never answer the card shown next (the `y` of "try again" would allow
   * it): keys are dropped until Enter or Esc, and only then is the next card shown (and armed).
   */
  private dropShown(): void {
    if (this.mode.kind === "reason" || this.mode.kind === "token") {
      clearTimeout(this.armTimer);
      this.current = null;
      this.mode = { kind: "interrupted" };
      this.setPrompt(this.c.dim("  that card ended while you typed (what you typed is dropped); Enter or Esc shows the next card "));
      return;
    }
    this.hide();
    this.showNext();
  }

  /** In a terminal: shows the oldest card not skipped, rings, drops type-ahead and arms after ARM_MS. */
  private showNext(): void {
    if (!this.o.tty || this.current || this.mode.kind === "interrupted") return;
    const next = this.queue.find((c) => !this.skipped.has(c.request_id));
    if (!next) {
      if (this.queue.length) this.setPrompt(this.c.dim(`${this.queue.length} skipped card(s) still pending: r shows them again, q detaches `));
      else this.setPrompt(null);
      return;
    }
    this.current = next;
    this.setPrompt(null);
    const rows = process.stdout.rows || 40;
    const block = cardBlock(this.c, next, {
      maxArgLines: Math.max(5, rows - 16),
      now: Date.now(),
      morePending: this.queue.length - 1,
      tokenMissing: next.requires_user_proof && !this.approver,
    });
    this.ring(next);
    for (const l of block) this.line(l);
    this.arm();
  }

  /** Ignores keys for ARM_MS (type-ahead dropped), then asks for one. */
  private arm(): void {
    clearTimeout(this.armTimer);
    const armedAt = performance.now() + ARM_MS;
    const card = this.current;
    this.mode = { kind: "card", armedAt, armed: false };
    this.flushInput();
    this.setPrompt(this.c.dim("  (read the card; keys are ignored for a moment) "));
    this.armTimer = setTimeout(() => {
      // armed one turn of the event loop later: keys read in the same turn as the timer (the process was
      // stalled while they were typed) are still dropped
      setImmediate(() => {
        if (this.mode.kind !== "card" || this.mode.armedAt !== armedAt || !this.current || this.current !== card) return;
        this.mode = { kind: "card", armedAt, armed: true };
        this.setPrompt(this.keysPrompt(this.current));
      });
    }, ARM_MS);
  }

  /** The armed prompt: the keys, in words on a wide terminal, shorter under 110 columns (so it never wraps). */
  private keysPrompt(card: ConsoleCard): string {
    if ((process.stdout.columns || 120) < 110) {
      return `  ${this.c.bold("allow?")} [y]once [n]deny${card.suggested_rule ? " [a]session" : ""} [v]iew [s]kip [q]uit › `;
    }
    const a = card.suggested_rule ? "  [a] allow for this session" : "";
    return `  ${this.c.bold("allow?")} [y] once  [n] deny${a}  [v] view arguments  [s] skip  [q] detach › `;
  }

  /** Sends a decision for `card` from its root; true when the server took it. */
  private async decide(card: ConsoleCard, decision: Decision, reason?: string): Promise<boolean> {
    const headers: Record<string, string> = {};
    if (decision !== "deny") {
      if (!this.approver) this.approver = readTokenIfUsable(join(this.client.dataDir, APPROVER_TOKEN_FILE));
      if (this.approver) headers["X-Airlock-Approver"] = this.approver;
      else if (card.requires_user_proof) {
        if (this.o.tty) {
          this.mode = { kind: "token", buf: "", then: decision };
          this.setPrompt("  approver token (hidden; Enter sends, Esc goes back): ");
          return false;
        }
        this.line(`${card.request_id}: allowing needs the approver token, and ${join(this.client.dataDir, APPROVER_TOKEN_FILE)} cannot be read; deny it, or answer in a terminal or the console`);
        return false;
      }
    }
    this.mine.add(card.request_id);
    const body = { decision, ...(reason ? { reason } : {}) };
    let r: { status: number; body: Record<string, any> };
    try {
      r = await this.client.call("POST", `/sessions/${encodeURIComponent(card.answer_in ?? card.surfaced_in)}/actions/${encodeURIComponent(card.request_id)}`, body, headers);
    } catch (e) {
      this.mine.delete(card.request_id);
      this.line(this.c.red(`${card.request_id}: not sent: ${safe((e as Error).message.split("\n")[0]!)}`));
      return false;
    }
    if (r.status === 200) {
      this.queue = this.queue.filter((c) => c.request_id !== card.request_id);
      this.skipped.delete(card.request_id);
      const rule = r.body.rule ? ` (rule ${safe(String(r.body.rule))} now allows matching calls in the tree)` : "";
      this.line(`${this.label(card)} ${safe(card.tool)}: ${decision === "deny" ? this.c.red(OUTCOME[decision]) : this.c.green(OUTCOME[decision])} ${card.request_id}${reason ? ` (reason: ${reason})` : ""}${rule}`);
      this.checkIdle();
      return true;
    }
    this.mine.delete(card.request_id);
    const msg = safe(`${r.body.error ?? `HTTP ${r.status}`}: ${r.body.message ?? ""}`.split("\n")[0]!);
    if (r.status === 404 || r.status === 409) {
      // decided, expired or gone: it cannot be answered any more
      this.queue = this.queue.filter((c) => c.request_id !== card.request_id);
      this.line(this.c.yellow(`${card.request_id}: not pending any more (${msg})`));
      return true;
    }
    if (r.body.error === "user_proof_required" || r.body.error === "user_proof_invalid") {
      this.approver = null;
      this.line(this.c.red(`${card.request_id}: the approver token was refused (${msg})`));
      if (this.o.tty) {
        this.mode = { kind: "token", buf: "", then: decision };
        this.setPrompt("  approver token (hidden; Enter sends, Esc goes back): ");
      }
      return false;
    }
    this.line(this.c.red(`${card.request_id}: not applied: ${msg}`));
    return false;
  }

  // ---- input: --plain lines -------------------------------------------------------------------

  /** Reads `y ID`, `n ID [reason]`, `a ID`, `q` lines from stdin. Returns the stop function. */
  private startLines(): () => void {
    const rl = createInterface({ input: process.stdin, terminal: false });
    rl.on("line", (raw) => void this.onLine(raw.trim()));
    return () => rl.close();
  }

  private async onLine(text: string): Promise<void> {
    if (!text) return;
    const m = /^(\S+)(?:\s+(\S+))?(?:\s+(.*))?$/.exec(text)!;
    const [cmd, id, rest] = [m[1]!.toLowerCase(), m[2], m[3]?.trim()];
    if (cmd === "q" || cmd === "quit") return this.detach();
    const decision: Decision | null = cmd === "y" ? "allow_once" : cmd === "n" ? "deny" : cmd === "a" ? "allow_session" : null;
    if (!decision || !id) {
      this.line(`? expected: y ID | n ID [reason] | a ID | q (got "${text.slice(0, 80)}")`);
      return;
    }
    const card = this.queue.find((c) => c.request_id === id);
    if (!card) {
      this.line(`? ${id} is not a pending card of this tree`);
      return;
    }
    if (decision === "allow_session" && !card.suggested_rule) {
      this.line(`? ${id} offers no rule for the session (the floor's, elevation's, a rule's or a hook's ask): allow it once with y ${id}`);
      return;
    }
    await this.decide(card, decision, decision === "deny" ? rest : undefined);
  }

  // ---- input: keys in a raw terminal ----------------------------------------------------------

  /** Puts stdin in raw mode and reads keys. Returns the stop function (restores the terminal). */
  private startKeys(): () => void {
    const stdin = process.stdin;
    stdin.setRawMode(true);
    stdin.setEncoding("utf8");
    const onData = (chunk: string): void => {
      for (const key of splitKeys(chunk)) void this.onKey(key);
    };
    stdin.on("data", onData);
    stdin.resume();
    let stopped = false;
    return () => {
      if (stopped) return;
      stopped = true;
      stdin.off("data", onData);
      try {
        stdin.setRawMode(false);
      } catch {
        // the terminal is gone
      }
      stdin.pause();
    };
  }

  private async onKey(key: string): Promise<void> {
    if (key === "\x03" || key === "\x04") return this.detach(); // Ctrl-C, Ctrl-D: always detach
    const mode = this.mode;
    switch (mode.kind) {
      case "busy":
        return;
      case "interrupted":
        // the rest of an interrupted line: dropped, until the person ends it
        if (key === "\r" || key === "\n" || key === "\x1b") {
          this.mode = { kind: "idle" };
          this.setPrompt(null);
          this.showNext();
        }
        return;
      case "idle":
        if (key === "q") return this.detach();
        if (key === "r" && this.skipped.size) {
          this.skipped.clear();
          this.showNext();
        }
        return; // anything typed while no card is shown is dropped: it never answers a later card
      case "reason":
      case "token": {
        if (key === "\x1b") {
          // Esc: back to the card
          this.setPrompt(null);
          if (this.current) this.arm();
          return;
        }
        if (key === "\r" || key === "\n") {
          const card = this.current;
          if (!card) return;
          this.mode = { kind: "busy" };
          if (mode.kind === "reason") this.setPrompt(null);
          else {
            this.approver = mode.buf.trim() || null;
            this.setPrompt(null);
          }
          const ok = await this.decide(card, mode.kind === "reason" ? "deny" : mode.then, mode.kind === "reason" ? mode.buf.trim() || undefined : undefined);
          this.afterDecision(card, ok);
          return;
        }
        const buf = key === "\x7f" || key === "\b" ? mode.buf.slice(0, -1) : key.length === 1 && key >= " " ? mode.buf + key : mode.buf;
        this.mode = { ...mode, buf };
        if (mode.kind === "reason") this.setPrompt(`  reason for the model (Enter sends, empty for none, Esc goes back): ${buf}`);
        return;
      }
      case "card": {
        const card = this.current;
        if (!card) return;
        if (key === "q") return this.detach();
        if (!mode.armed || performance.now() < mode.armedAt) return; // not armed yet: type-ahead never answers
        switch (key) {
          case "y":
          case "a": {
            if (key === "a" && !card.suggested_rule) {
              this.line(`  ${card.request_id} offers no rule for the session: y allows it once`);
              return;
            }
            this.mode = { kind: "busy" };
            this.setPrompt(null);
            const ok = await this.decide(card, key === "y" ? "allow_once" : "allow_session");
            this.afterDecision(card, ok);
            return;
          }
          case "n":
            this.mode = { kind: "reason", buf: "" };
            this.setPrompt("  reason for the model (Enter sends, empty for none, Esc goes back): ");
            return;
          case "v":
            await this.view(card);
            return;
          case "s":
            this.skipped.add(card.request_id);
            this.line(`  skipped ${card.request_id} (still pending)`);
            this.hide();
            this.showNext();
            return;
          default:
            return;
        }
      }
      default:
        return assertNever(mode, "key mode");
    }
  }

  /** After a decision attempt on the shown card: the next card, or the same one again (armed anew). */
  private afterDecision(card: ConsoleCard, ok: boolean): void {
    if (this.mode.kind === "token") return; // asking for the token
    if (this.current?.request_id !== card.request_id) return; // it was dropped or decided elsewhere meanwhile
    if (ok || !this.queue.some((c) => c.request_id === card.request_id)) {
      this.hide();
      this.showNext();
    } else this.arm();
  }

  /** `v`: the full arguments, through `$PAGER` (default `less -R`) when they do not fit the screen. */
  private async view(card: ConsoleCard): Promise<void> {
    const { argumentLines } = await import("./attach-format.ts");
    const lines = argumentLines(card.arguments);
    const rows = process.stdout.rows || 40;
    this.mode = { kind: "busy" };
    this.setPrompt(null);
    let paged = false;
    if (lines.length > rows - 4) {
      try {
        process.stdin.setRawMode(false);
        process.stdin.pause();
        const pager = Bun.spawn(["sh", "-c", process.env.PAGER || "less -R"], { stdin: "pipe", stdout: "inherit", stderr: "inherit" });
        pager.stdin.write(`${card.request_id} ${safe(card.tool)} arguments:\n${lines.join("\n")}\n`);
        await pager.stdin.end();
        paged = (await pager.exited) === 0;
      } catch {
        paged = false;
      } finally {
        process.stdin.setRawMode(true);
        process.stdin.resume();
      }
    }
    if (!paged) for (const l of lines) this.line(`  ${l}`);
    if (this.current?.request_id === card.request_id) this.arm();
  }
}

/** Splits raw terminal input into keys: an escape sequence (`\x1b[A` …) is one key, any other character is one. */
export function splitKeys(chunk: string): string[] {
  const keys: string[] = [];
  for (let i = 0; i < chunk.length; ) {
    if (chunk[i] === "\x1b" && (chunk[i + 1] === "[" || chunk[i + 1] === "O")) {
      let j = i + 2;
      while (j < chunk.length && !/[A-Za-z~]/.test(chunk[j]!)) j++;
      keys.push(chunk.slice(i, j + 1));
      i = j + 1;
    } else {
      const cp = chunk.codePointAt(i)!;
      const ch = String.fromCodePoint(cp);
      keys.push(ch);
      i += ch.length;
    }
  }
  return keys;
}
