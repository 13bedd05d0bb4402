/**
 * @module console/session-view
 * One session: its messages, streamed text, tool calls with arguments and results (long output folded),
 * script logs and the calls scripts made, refusals with code and reason, subagent spawns linking to the
 * child; send a message, cancel a turn. Reads `GET /sessions/:id/events` (snapshot, then live).
 */
import { h } from "preact";
import { useState } from "preact/hooks";
import htm from "htm";
import { BoundedMap } from "../bounded.ts";
import { CardList } from "./cards.ts";
import { Args, Fold, pretty } from "./fold.ts";
import { api, openStream, reply } from "./net.ts";
import { changed, feed, MAX_LIVE, notice, sessionName, view, type LiveCall, type Message } from "./state.ts";
import { usageLine, type SessionUsage } from "./usage.ts";

const html = htm.bind(h);

let stop: AbortController | null = null;

/** Opens the stream of session `sid` (closing the previous one); a `snapshot` resets the view. */
export function watchSession(sid: string | null): void {
  if (view.sid === sid) return;
  stop?.abort();
  stop = null;
  Object.assign(view, { sid, state: "connecting", loaded: false, inFlight: false, messages: [], events: 0, errors: [], usage: null });
  view.messageIds = new Set();
  view.streaming = new Map();
  view.live = new BoundedMap(MAX_LIVE);
  changed();
  if (!sid) return;
  const ctl = new AbortController();
  stop = ctl;
  void openStream(
    `/sessions/${encodeURIComponent(sid)}/events`,
    {
      onState(s) {
        if (ctl.signal.aborted) return;
        view.state = s;
        changed();
      },
      onEvent(name, data) {
        if (ctl.signal.aborted) return;
        onSessionEvent(name, data);
        changed();
      },
    },
    ctl.signal,
  );
}

/** Reads the session's token usage (`GET /sessions/:id/usage`) into the view. */
async function loadUsage(sid: string): Promise<void> {
  const r = await api("GET", `/sessions/${encodeURIComponent(sid)}/usage`);
  if (r.status !== 200 || view.sid !== sid) return;
  view.usage = r.body as SessionUsage;
  changed();
}

function onSessionEvent(name: string, d: any): void {
  view.events++;
  switch (name) {
    case "snapshot":
      if (view.sid) void loadUsage(view.sid);
      view.loaded = true;
      view.messages = d.messages ?? [];
      view.messageIds = new Set(view.messages.map((m) => m.id));
      view.inFlight = !!d.in_flight;
      view.streaming = new Map();
      view.live = new BoundedMap(MAX_LIVE);
      view.errors = [];
      return;
    case "turn_started":
      view.inFlight = true;
      return;
    case "turn_finished":
      view.inFlight = false;
      view.streaming.delete(d.turn_id);
      if (view.sid) void loadUsage(view.sid);
      return;
    case "delta":
      view.streaming.set(d.turn_id, (view.streaming.get(d.turn_id) ?? "") + (d.text ?? ""));
      return;
    case "message":
      if (view.messageIds.has(d.id)) return;
      view.messageIds.add(d.id);
      view.messages.push(d);
      if (d.role === "assistant" && d.turn_id) view.streaming.delete(d.turn_id);
      return;
    case "tool_request": {
      view.live.set(d.call_id, { call_id: d.call_id, tool: d.tool, arguments: d.arguments, from_script: !!d.from_script });
      return;
    }
    case "tool_result": {
      const c = view.live.get(d.call_id);
      if (c) Object.assign(c, { ok: d.ok, result: d.result, error: d.error });
      return;
    }
    case "error":
      view.errors.push({ turn_id: d.turn_id, code: d.code, message: d.message });
      if (view.errors.length > 50) view.errors.shift();
      return;
    default:
      return; // cards come from the feed
  }
}

function parseJson(s: string): any {
  try {
    return JSON.parse(s);
  } catch {
    return undefined;
  }
}

/** A tool result: a refusal (code and reason), a spawn (link to the child), script logs, or folded output. */
function Result({ tool, content, isError }: { tool: string; content: unknown; isError: boolean }) {
  const v = typeof content === "string" ? (parseJson(content) ?? content) : content;
  const err = (v && typeof v === "object" && (v as any).error) || null;
  if (isError || err) {
    const e = err && typeof err === "object" ? err : { code: "error", message: pretty(v) };
    return html`<div class="refusal" role="note"><b class="code">${e.code}</b> ${e.message}</div>`;
  }
  const parts: unknown[] = [];
  if (tool === "subagent__spawn" && v && typeof v === "object" && (v as any).session_id) {
    const child = (v as any).session_id as string;
    parts.push(html`<div class="spawn">spawned <a href=${"#/s/" + child}>${sessionName(feed.sessions.get(child), child)} (${child})</a>${(v as any).status ? ` — ${(v as any).status}` : ""}</div>`);
  }
  if (tool === "code_execution__execute" && v && typeof v === "object" && Array.isArray((v as any).logs) && (v as any).logs.length) {
    parts.push(html`<div class="logs-title">script logs</div><${Fold} cls="logs" text=${(v as any).logs.map((l: unknown) => pretty(l)).join("\n")} />`);
  }
  parts.push(html`<${Fold} cls="result" text=${pretty(v)} />`);
  return html`<div class="result-box">${parts}</div>`;
}

function Call({ id, tool, args, result }: { id: string; tool: string; args: unknown; result: { content: unknown; isError: boolean } | null }) {
  return html`<div class="call" data-call-id=${id}>
    <div class="call-head"><span class="tool">${tool}</span></div>
    <${Args} args=${args} />
    ${result ? html`<${Result} tool=${tool} content=${result.content} isError=${result.isError} />` : html`<div class="muted">running…</div>`}
  </div>`;
}

function liveResult(c: LiveCall | undefined): { content: unknown; isError: boolean } | null {
  if (!c || c.ok === undefined) return null;
  return c.ok ? { content: c.result, isError: false } : { content: { error: c.error }, isError: true };
}

function Transcript() {
  const results = new Map<string, Message>();
  for (const m of view.messages) if (m.role === "tool" && m.tool_call_id) results.set(m.tool_call_id, m);
  const direct = new Set<string>();
  const rows = view.messages.map((m) => {
    switch (m.role) {
      case "user":
        return html`<div class="msg user" key=${m.id}><div class="who">you</div><div class="text">${m.content}</div></div>`;
      case "assistant":
        return html`<div class="msg assistant" key=${m.id}>
          ${m.content ? html`<div class="text">${m.content}</div>` : null}
          ${(m.tool_calls ?? []).map((tc) => {
            direct.add(tc.id);
            const r = results.get(tc.id);
            return html`<${Call} key=${tc.id} id=${tc.id} tool=${tc.name} args=${tc.arguments} result=${r ? { content: r.content, isError: !!r.is_error } : liveResult(view.live.get(tc.id))} />`;
          })}
        </div>`;
      case "tool":
        return m.tool_call_id && view.messages.some((x) => x.tool_calls?.some((t) => t.id === m.tool_call_id))
          ? null
          : html`<div class="msg tool" key=${m.id}><${Result} tool=${m.name ?? ""} content=${m.content} isError=${!!m.is_error} /></div>`;
      default:
        return null;
    }
  });
  const scriptCalls = [...view.live.values()].filter((c) => c.from_script && !direct.has(c.call_id));
  return html`<div class="transcript">
    ${rows}
    ${scriptCalls.length
      ? html`<details class="script-calls" open><summary>calls made by scripts (${scriptCalls.length}, this connection)</summary>${scriptCalls.map(
          (c) => html`<${Call} key=${c.call_id} id=${c.call_id} tool=${c.tool} args=${c.arguments} result=${liveResult(c)} />`,
        )}</details>`
      : null}
    ${[...view.streaming.entries()].map(([t, text]) => html`<div class="msg assistant streaming" key=${"s" + t}><div class="text">${text}</div></div>`)}
    ${view.errors.map((e, i) => html`<div class="refusal" key=${"e" + i}><b class="code">${e.code}</b> ${e.message}</div>`)}
  </div>`;
}

function Composer({ sid }: { sid: string }) {
  const [text, setText] = useState("");
  const [busy, setBusy] = useState(false);
  return html`<form class="composer" onSubmit=${async (e: Event) => {
    e.preventDefault();
    if (!text.trim() || busy) return;
    setBusy(true);
    const r = await reply(sid, text);
    setBusy(false);
    if (r.status === 200) setText("");
    else notice(`send: ${r.status} ${r.body?.error ?? ""}: ${r.body?.message ?? ""}`, "warn");
  }}>
    <textarea name="message" rows="3" placeholder="message the agent" value=${text} onInput=${(e: any) => setText(e.currentTarget.value)}></textarea>
    <div class="composer-buttons">
      <button type="submit" class="send" disabled=${busy || view.inFlight}>Send</button>
      ${view.inFlight
        ? html`<button type="button" class="cancel" onClick=${async () => {
            const r = await api("POST", `/sessions/${encodeURIComponent(sid)}/cancel`);
            notice(r.status === 200 ? (r.body.cancelled ? "turn cancelled" : "nothing was running") : `cancel: ${r.body?.message ?? r.status}`);
          }}>Cancel turn</button>`
        : null}
    </div>
  </form>`;
}

/** The view of one session: header, its tree, pinned cards (as root or home), transcript, composer. */
export function SessionView({ sid }: { sid: string }) {
  const s = feed.sessions.get(sid);
  const children = [...feed.sessions.values()].filter((x) => x.parent_session_id === sid);
  const cards = [...feed.cards.values()].filter((c) => c.answer_in === sid || c.home_session_id === sid);
  const running = feed.inFlight.has(sid) || view.inFlight;
  return html`<main class="session" data-session-id=${sid}>
    <header class="session-head">
      <h1>${sessionName(s, sid)} <span class="muted">${sid}</span></h1>
      <div class="facts">
        <span class=${"state " + (running ? "running" : "idle")}>${running ? "running" : "idle"}</span>
        ${s ? html`<span>mode ${s.mode}</span><span>workspace <code>${s.workspace}</code></span>${s.headless ? html`<span class="badge">headless</span>` : null}` : null}
        ${s?.parent_session_id ? html`<a href=${"#/s/" + s.parent_session_id}>parent: ${sessionName(feed.sessions.get(s.parent_session_id), s.parent_session_id)}</a>` : null}
        <span class=${"conn " + view.state} data-state=${view.state}>${view.state}</span>
      </div>
      ${usageLine(view.usage) ? html`<div class="usage muted" data-usage>${usageLine(view.usage)}</div>` : null}
      ${children.length
        ? html`<div class="children">subagents: ${children.map(
            (c) => html`<a key=${c.id} href=${"#/s/" + c.id} class=${feed.inFlight.has(c.id) ? "running" : ""}>${sessionName(c, c.id)}${feed.inFlight.has(c.id) ? " (running)" : ""}</a> `,
          )}</div>`
        : null}
    </header>
    <${CardList} cards=${cards} />
    ${view.loaded ? html`<${Transcript} />` : html`<p class="muted">loading…</p>`}
    <${Composer} sid=${sid} />
  </main>`;
}
