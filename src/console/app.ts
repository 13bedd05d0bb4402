/**
 * @module console/app
 * The watcher's console (issue 15), bundled into /console.js: the sessions and their trees on the left,
 * pending cards pinned on top, one session's view or the schedules in the middle. State comes from the
 * feed (`GET /console/events`: a snapshot, then turns and cards of every session) and the open session's
 * stream; both reconnect with backoff and resync from their snapshot.
 */
import { h, render } from "preact";
import { useState } from "preact/hooks";
import htm from "htm";
import { CardList } from "./cards.ts";
import { api, openStream, reply, setToken, takeToken } from "./net.ts";
import { Schedules } from "./schedules.ts";
import { SessionView, watchSession } from "./session-view.ts";
import { changed, chainLabel, feed, notice, pendingCounts, sessionName, setRenderer, view, type Card, type Session } from "./state.ts";

const html = htm.bind(h);

type Route = { page: "home" } | { page: "session"; id: string } | { page: "schedules" };

function route(): Route {
  const m = /^#\/s\/([\w-]+)/.exec(location.hash);
  if (m) return { page: "session", id: m[1]! };
  if (location.hash.startsWith("#/schedules")) return { page: "schedules" };
  return { page: "home" };
}

let feedStop: AbortController | null = null;

function startFeed(): void {
  feedStop?.abort();
  const ctl = new AbortController();
  feedStop = ctl;
  void openStream(
    "/console/events",
    {
      onState(s) {
        feed.state = s;
        changed();
      },
      onEvent(name, d) {
        onFeedEvent(name, d);
        changed();
      },
    },
    ctl.signal,
  );
}

let refetching = false;
async function refetchSessions(): Promise<void> {
  if (refetching) return;
  refetching = true;
  const r = await api("GET", "/sessions?limit=500");
  refetching = false;
  if (r.status === 200) {
    for (const s of r.body.sessions as Session[]) feed.sessions.set(s.id, s);
    changed();
  }
}

function onFeedEvent(name: string, d: any): void {
  feed.events++;
  switch (name) {
    case "snapshot": {
      feed.sessions = new Map((d.sessions as Session[]).map((s) => [s.id, s]));
      feed.inFlight = new Set(d.in_flight as string[]);
      feed.cards = new Map((d.pending_actions as Card[]).map((c) => [c.request_id, c]));
      for (const id of [...feed.ui.keys()]) if (!feed.cards.has(id)) feed.ui.delete(id);
      return;
    }
    case "turn_started":
      feed.inFlight.add(d.session_id);
      if (!feed.sessions.has(d.session_id)) void refetchSessions();
      return;
    case "turn_finished":
    case "error":
      if (name === "turn_finished") feed.inFlight.delete(d.session_id);
      return;
    case "action_required": {
      const c = d as Card;
      feed.cards.set(c.request_id, c);
      if (!feed.sessions.has(c.home_session_id)) void refetchSessions();
      desktopNotify(c);
      return;
    }
    case "action_resolved": {
      const c = feed.cards.get(d.request_id);
      feed.cards.delete(d.request_id);
      feed.ui.delete(d.request_id);
      if (c && !feed.mine.has(d.request_id)) notice(`${chainLabel(c)} ${c.tool}: decided elsewhere (${d.decision})`, "warn");
      return;
    }
    default:
      return;
  }
}

function desktopNotify(c: Card): void {
  if (!document.hidden || typeof Notification === "undefined" || Notification.permission !== "granted") return;
  try {
    new Notification("airlock: a call waits for you", { body: `${chainLabel(c)}: ${c.tool}`, tag: c.request_id });
  } catch {
    // notifications unavailable
  }
}

function Tree({ id, depth, counts }: { id: string; depth: number; counts: Map<string, number> }) {
  const s = feed.sessions.get(id);
  const kids = [...feed.sessions.values()].filter((x) => x.parent_session_id === id).sort((a, b) => (a.created_at < b.created_at ? -1 : 1));
  const n = counts.get(id) ?? 0;
  const running = feed.inFlight.has(id);
  const r = route();
  const here = r.page === "session" && r.id === id;
  return html`<li class=${"node" + (here ? " here" : "")} data-session-id=${id}>
    <a href=${"#/s/" + id}>
      <span class=${"dot " + (n ? "waiting" : running ? "running" : "idle")} title=${n ? "waiting for you" : running ? "running" : "idle"}></span>
      <span class="name">${sessionName(s, id)}</span>
      ${s?.headless ? html`<span class="badge">headless</span>` : null}
      ${n ? html`<span class="count" title="pending cards">${n}</span>` : null}
      ${depth === 0 ? html`<span class="muted small">${(s?.created_at ?? "").slice(5, 16).replace("T", " ")}</span>` : null}
    </a>
    ${kids.length && depth < 16 ? html`<ul>${kids.map((k) => html`<${Tree} key=${k.id} id=${k.id} depth=${depth + 1} counts=${counts} />`)}</ul>` : null}
  </li>`;
}

function Sidebar() {
  const counts = pendingCounts();
  const roots = [...feed.sessions.values()].filter((s) => !s.parent_session_id || !feed.sessions.has(s.parent_session_id));
  roots.sort((a, b) => (a.created_at < b.created_at ? 1 : a.created_at > b.created_at ? -1 : a.id < b.id ? 1 : -1));
  return html`<nav class="sidebar">
    <div class="nav-links"><a href="#/">home</a> · <a href="#/schedules">schedules</a></div>
    <h2>sessions</h2>
    ${roots.length ? html`<ul class="tree">${roots.map((s) => html`<${Tree} key=${s.id} id=${s.id} depth=${0} counts=${counts} />`)}</ul>` : html`<p class="muted">none yet</p>`}
  </nav>`;
}

function NewSession() {
  const [workspace, setWorkspace] = useState("");
  const [mode, setMode] = useState("");
  const [message, setMessage] = useState("");
  const [busy, setBusy] = useState(false);
  return html`<form class="new-session" onSubmit=${async (e: Event) => {
    e.preventDefault();
    if (busy) return;
    setBusy(true);
    const body: Record<string, string> = {};
    if (workspace.trim()) body.workspace = workspace.trim();
    if (mode) body.mode = mode;
    // Titled by its first message, as `airlock run` titles its sessions: else every root reads "root".
    const first = (message.trim().split("\n")[0] ?? "").slice(0, 80);
    if (first) body.title = first;
    const r = await api("POST", "/sessions", body);
    if (r.status !== 201) {
      setBusy(false);
      notice(`new session: ${r.status} ${r.body?.error ?? ""}: ${r.body?.message ?? ""}`, "warn");
      return;
    }
    feed.sessions.set(r.body.id, r.body);
    if (message.trim()) {
      const t = await reply(r.body.id, message);
      if (t.status !== 200) notice(`send: ${t.status} ${t.body?.message ?? ""}`, "warn");
    }
    setBusy(false);
    setMessage("");
    location.hash = "#/s/" + r.body.id;
  }}>
    <h2>start a session</h2>
    <label>workspace <input name="workspace" value=${workspace} onInput=${(e: any) => setWorkspace(e.currentTarget.value)} placeholder="the server's folder" /></label>
    <label>mode <select name="mode" value=${mode} onChange=${(e: any) => setMode(e.currentTarget.value)}>
      <option value="">default</option><option>autonomous</option><option>smart</option><option>approve</option><option>chat</option>
    </select></label>
    <textarea name="first-message" rows="2" placeholder="first message (optional)" value=${message} onInput=${(e: any) => setMessage(e.currentTarget.value)}></textarea>
    <button type="submit" disabled=${busy}>Start</button>
  </form>`;
}

function Home() {
  const cards = [...feed.cards.values()];
  return html`<main class="home">
    <h1>pending cards</h1>
    <${CardList} cards=${cards} empty="Nothing waits for you." />
    <${NewSession} />
  </main>`;
}

function Notices() {
  if (!feed.notices.length) return null;
  return html`<ul class="notices" aria-live="polite">${feed.notices.map((n) => html`<li key=${n.n} class=${n.kind}>${n.text}</li>`)}</ul>`;
}

function NotifyButton() {
  if (typeof Notification === "undefined" || Notification.permission !== "default") return null;
  return html`<button class="notify" onClick=${() => void Notification.requestPermission().then(changed)}>desktop notifications</button>`;
}

function TokenScreen() {
  const [v, setV] = useState("");
  return html`<main class="token-screen">
    <h1>airlock console</h1>
    <p>Open the link <code>airlock console</code> prints (it carries the API token in the part after <code>#</code>, which never reaches the server), or paste the API token:</p>
    <form onSubmit=${(e: Event) => {
      e.preventDefault();
      if (!v.trim()) return;
      setToken(v);
      boot();
    }}><input type="password" name="api-token" value=${v} onInput=${(e: any) => setV(e.currentTarget.value)} /> <button type="submit">Open</button></form>
  </main>`;
}

function App() {
  if (feed.state === "unauthorized" || !sessionStorage.getItem("airlock.token")) return html`<${TokenScreen} />`;
  const r = route();
  const n = feed.cards.size;
  document.title = n ? `(${n}) airlock` : "airlock";
  return html`<div class="layout">
    <header class="top">
      <a class="brand" href="#/">airlock</a>
      <span class=${"conn " + feed.state} data-state=${feed.state} title="the server's event feed">${feed.state}</span>
      ${n ? html`<a class="pending" href="#/">${n} pending</a>` : null}
      <${NotifyButton} />
    </header>
    <${Sidebar} />
    <div class="main">
      <${Notices} />
      ${r.page === "session" ? html`<${SessionView} sid=${r.id} />` : r.page === "schedules" ? html`<${Schedules} />` : html`<${Home} />`}
    </div>
  </div>`;
}

const root = document.getElementById("app")!;
root.textContent = "";
setRenderer(() => render(html`<${App} />`, root));

function onRoute(): void {
  const r = route();
  watchSession(r.page === "session" ? r.id : null);
  changed();
}

function boot(): void {
  if (!takeToken()) {
    changed();
    return;
  }
  startFeed();
  onRoute();
}

window.addEventListener("hashchange", onRoute);
// The page's figures for benches and tests: events received and the heap (Chrome only).
(window as any).airlockConsole = { feed, view };
boot();
