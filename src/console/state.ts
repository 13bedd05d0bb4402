/**
 * @module console/state
 * The page's state, kept in plain objects and reset by each `snapshot`: the feed (sessions, turns
 * running, pending cards, notices) and the open session's view (messages, streamed text, live calls).
 * Every change calls the render scheduler set by app.ts.
 */
import type { SessionUsage } from "./usage.ts";
import { BoundedMap } from "../bounded.ts";

/** A card as the feed sends it (docs/api.md "Cards", plus the chain and the session to answer from). */
export interface Card {
  request_id: string;
  home_session_id: string;
  surfaced_in: string;
  tool: string;
  arguments: unknown;
  inspector: string;
  reason: string;
  requires_user_proof: boolean;
  expires_at: string;
  files?: { path: string; kind: string; size?: number; sha256?: string; link?: string }[];
  replaces?: string;
  /** The rule "Allow for this session" adds for the session tree (absent on the floor's and other unanswerable asks). */
  suggested_rule?: string;
  /** Why allowing will not help: the sandbox will still refuse the call's write (present only when certain). */
  will_fail?: string;
  chain: { id: string; name: string }[];
  answer_in: string;
}

/** Per-card state of this page: a decision in flight, the last error, whether the token field is open. */
export interface CardUi {
  busy?: boolean;
  error?: string;
  askToken?: boolean;
  /** What the person typed in the card's approver-token field: Allow once sends it (and keeps it on success) like a kept token. */
  draft?: string;
}

export interface Session {
  id: string;
  parent_session_id: string | null;
  title: string | null;
  workspace: string;
  mode: string;
  headless: boolean;
  spawn_index: number | null;
  created_at: string;
}

export interface Message {
  id: string;
  turn_id: string | null;
  role: string;
  content: string;
  tool_calls?: { id: string; name: string; arguments: unknown }[];
  tool_call_id?: string;
  name?: string;
  is_error?: boolean;
}

/** A call seen live on the session's stream (calls made from scripts are only seen here). */
export interface LiveCall {
  call_id: string;
  tool: string;
  arguments: unknown;
  from_script: boolean;
  ok?: boolean;
  result?: unknown;
  error?: { code: string; message: string };
}

export interface Notice {
  n: number;
  text: string;
  kind: "info" | "warn";
}

export const feed = {
  state: "connecting" as string,
  sessions: new Map<string, Session>(),
  inFlight: new Set<string>(),
  cards: new Map<string, Card>(),
  ui: new Map<string, CardUi>(),
  /** Cards this page answered (their `action_resolved` is not "decided elsewhere"). */
  mine: new Set<string>(),
  notices: [] as Notice[],
  /** Feed events received (for the memory figure). */
  events: 0,
};

/** Live calls the open session's view keeps (the oldest forgotten first). */
export const MAX_LIVE = 500;

/** The open session's view. Bounded: live calls keep the last {@link MAX_LIVE}. */
export const view = {
  sid: null as string | null,
  state: "connecting" as string,
  loaded: false,
  inFlight: false,
  messages: [] as Message[],
  messageIds: new Set<string>(),
  streaming: new Map<string, string>(),
  live: new BoundedMap<string, LiveCall>(MAX_LIVE),
  errors: [] as { turn_id: string; code: string; message: string }[],
  events: 0,
  /** `GET /sessions/:id/usage` (console/usage.ts), read on open and after each turn; null until read. */
  usage: null as SessionUsage | null,
};

let renderer: () => void = () => {};
let queued = false;

/** Sets the function that redraws the page. */
export function setRenderer(fn: () => void): void {
  renderer = fn;
}

/** Redraws once, soon (changes made in one task are drawn together). */
export function changed(): void {
  if (queued) return;
  queued = true;
  setTimeout(() => {
    queued = false;
    renderer();
  }, 0);
}

let noticeN = 0;

/** Shows a line in the notices strip (the last 8 are kept). */
export function notice(text: string, kind: Notice["kind"] = "info"): void {
  feed.notices = [...feed.notices.slice(-7), { n: ++noticeN, text, kind }];
  changed();
}

/** The chain label of a card, as text: `root › subagent#0 › subagent#1`. */
export function chainLabel(c: Card): string {
  return c.chain.map((l) => l.name).join(" › ");
}

/** A session's display name: title, else `root` / `subagent#N`. */
export function sessionName(s: Session | undefined, id: string): string {
  if (!s) return id.slice(0, 12);
  if (s.title) return s.title;
  return s.parent_session_id ? `subagent#${s.spawn_index ?? "?"}` : "root";
}

/** Pending cards counted at every session and rolled up to each ancestor. */
export function pendingCounts(): Map<string, number> {
  const out = new Map<string, number>();
  for (const c of feed.cards.values()) {
    const seen = new Set<string>();
    let id: string | null = c.home_session_id;
    for (let depth = 0; id && depth < 64 && !seen.has(id); depth++) {
      seen.add(id);
      out.set(id, (out.get(id) ?? 0) + 1);
      id = feed.sessions.get(id)?.parent_session_id ?? null;
    }
    for (const l of c.chain) if (!seen.has(l.id)) out.set(l.id, (out.get(l.id) ?? 0) + 1);
  }
  return out;
}
