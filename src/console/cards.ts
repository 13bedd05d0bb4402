/**
 * @module console/cards
 * Pending cards: what each shows (chain label, tool, full arguments, the diff a file write would make,
 * every inspector's reason, why allowing will not help when the sandbox will still refuse the call, expiry, a
 * lock when the approver token is needed, the rule "Allow for this session" would add) and how a person answers (Allow once, Allow for this session, Deny).
 * Buttons are inert for {@link INERT_MS} after any card appears or moves, so a double click cannot answer
 * a card that slid under the pointer.
 */
import { h } from "preact";
import { useEffect, useState } from "preact/hooks";
import htm from "htm";
import { api, approverToken, setApproverToken } from "./net.ts";
import { changed, chainLabel, feed, notice, type Card } from "./state.ts";
import { Args, Fold } from "./fold.ts";

const html = htm.bind(h);

/** How long buttons ignore presses after a card appears, moves or is answered, ms. */
export const INERT_MS = 400;

let inertUntil = 0;
let lastOrder = "";
let rearm: ReturnType<typeof setTimeout> | undefined;

/**
 * Arms the guard: presses are ignored for {@link INERT_MS} ms. Redraws at once too, so the buttons show
 * disabled while presses are ignored (a resize arms it between two draws: an Allow that looked enabled
 * then did nothing, and the console test's next step waited for a refusal that never came).
 */
function makeInert(): void {
  inertUntil = performance.now() + INERT_MS;
  changed();
  clearTimeout(rearm);
  rearm = setTimeout(changed, INERT_MS + 20);
}

/** Marks the buttons inert when the order of the shown cards changed (call while rendering a card list). */
export function noteOrder(ids: string[]): void {
  const key = ids.join(",");
  if (key !== lastOrder) {
    lastOrder = key;
    makeInert();
  }
}

function isInert(): boolean {
  return performance.now() < inertUntil;
}

/** What each decision is called in the page's notices. */
const DONE: Record<"allow_once" | "allow_session" | "deny", string> = { allow_once: "allowed once", allow_session: "allowed for this session", deny: "denied" };

/** Posts a decision from the card's root surface; the approver token goes only with an allow. */
export async function decide(card: Card, decision: "allow_once" | "allow_session" | "deny"): Promise<void> {
  if (isInert()) return;
  const ui = feed.ui.get(card.request_id) ?? {};
  if (ui.busy) return;
  makeInert();
  const headers: Record<string, string> = {};
  const kept = approverToken();
  const typed = ui.draft?.trim() || null;
  // A token typed in the field but not yet kept counts too: a person types it and presses Allow once.
  const tok = typed ?? kept;
  if (decision !== "deny" && card.requires_user_proof && tok) headers["x-airlock-approver"] = tok;
  feed.mine.add(card.request_id);
  feed.ui.set(card.request_id, { ...ui, busy: true, error: undefined });
  changed();
  const r = await api("POST", `/sessions/${encodeURIComponent(card.answer_in)}/actions/${encodeURIComponent(card.request_id)}`, { decision }, headers);
  const label = `${chainLabel(card)} ${card.tool}`;
  if (r.status === 200) {
    if (typed && headers["x-airlock-approver"]) setApproverToken(typed); // it worked: kept for the tab
    feed.cards.delete(card.request_id);
    feed.ui.delete(card.request_id);
    notice(`${label}: ${DONE[decision]}${r.body?.rule ? ` (${r.body.rule})` : ""}`);
    return;
  }
  feed.mine.delete(card.request_id);
  const msg = `${r.status || "no answer"} ${r.body?.error ?? ""}: ${r.body?.message ?? ""}`;
  if (r.status === 409 || r.status === 404) {
    // Already decided, expired or gone: the card cannot be answered any more.
    feed.cards.delete(card.request_id);
    feed.ui.delete(card.request_id);
    notice(`${label}: ${msg}`, "warn");
    return;
  }
  const needToken = r.status === 403 && (r.body?.error === "user_proof_required" || r.body?.error === "user_proof_invalid");
  if (needToken && tok && tok === kept) setApproverToken(null); // the kept token was refused
  // A refused typed token is cleared from the field; any other error keeps what was typed.
  feed.ui.set(card.request_id, { busy: false, error: msg, askToken: needToken || ui.askToken, draft: needToken ? "" : ui.draft });
  changed();
}

function Countdown({ at }: { at: string }) {
  const [, tick] = useState(0);
  useEffect(() => {
    const t = setInterval(() => tick((n) => n + 1), 1000);
    return () => clearInterval(t);
  }, []);
  const s = Math.max(0, Math.round((Date.parse(at) - Date.now()) / 1000));
  const text = s >= 3600 ? `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m` : `${Math.floor(s / 60)}:${String(s % 60).padStart(2, "0")}`;
  return html`<span class=${"expiry" + (s < 60 ? " soon" : "")} title=${"expires at " + at}>expires in ${text}</span>`;
}

/** The diff of a write/edit card against the current file (fetched once per card). */
function Preview({ card }: { card: Card }) {
  const [p, setP] = useState<any>(null);
  useEffect(() => {
    let live = true;
    void api("GET", `/sessions/${encodeURIComponent(card.answer_in)}/actions/${encodeURIComponent(card.request_id)}/preview`).then((r) => {
      if (live) setP(r);
    });
    return () => {
      live = false;
    };
  }, [card.request_id]);
  if (!p) return html`<div class="preview muted">loading the diff against the current file…</div>`;
  if (p.status !== 200) return html`<div class="preview warn">no diff: ${p.body?.message ?? p.status}</div>`;
  const d = p.body;
  const text = d.diff.map((l: any) => `${l.op}${l.text}`).join("\n");
  return html`<div class="preview">
    <div class="preview-head">${d.exists ? `diff against the current ${d.path} (${d.size} bytes)` : `${d.path} does not exist yet: all new`}${d.exact ? "" : " — shown as a block replacement (too large to align)"}</div>
    ${d.problem ? html`<div class="warn">${d.problem}</div>` : null}
    <${Fold} text=${text} cls="diff" lines=${24} render=${(t: string) => t.split("\n").map((l) => html`<span class=${l[0] === "+" ? "add" : l[0] === "-" ? "del" : "ctx"}>${l}</span>`)} />
  </div>`;
}

function TokenField({ card }: { card: Card }) {
  const v = feed.ui.get(card.request_id)?.draft ?? "";
  return html`<form class="token" onSubmit=${(e: Event) => {
    e.preventDefault();
    if (!v.trim()) return;
    setApproverToken(v);
    const ui = feed.ui.get(card.request_id) ?? {};
    feed.ui.set(card.request_id, { ...ui, draft: undefined, askToken: false, error: "approver token kept for this tab; press Allow once again" });
    changed();
  }}>
    <label>approver token <input type="password" autocomplete="off" name="approver" value=${v} onInput=${(e: any) => {
      const ui = feed.ui.get(card.request_id) ?? {};
      feed.ui.set(card.request_id, { ...ui, draft: e.currentTarget.value });
    }} placeholder="the approver-token file's content" /></label>
    <button type="submit" class="keep">Keep for this tab</button>
    <span class="muted">'airlock token' prints where it is; type it and press Allow once (sent only with that decision, then kept for this tab).</span>
  </form>`;
}

function Files({ files }: { files: NonNullable<Card["files"]> }) {
  return html`<ul class="files">${files.map(
    (f) => html`<li><code>${f.path}</code> ${f.kind === "file" ? `sha256 ${f.sha256} (${f.size} bytes)` : f.kind === "symlink" ? `symlink → ${f.link}` : f.kind}</li>`,
  )}</ul>`;
}

/** One pending card. */
export function CardView({ card }: { card: Card }) {
  const ui = feed.ui.get(card.request_id) ?? {};
  const inert = isInert();
  const home = card.chain[card.chain.length - 1];
  return html`<article class="card" data-request-id=${card.request_id} ref=${(el: Element | null) => {
    if (el && !el.hasAttribute("data-drawn")) {
      el.setAttribute("data-drawn", "1");
      performance.mark(`card:${card.request_id}`);
    }
  }}>
    <header>
      <span class="chain" title=${card.chain.map((l) => l.id).join(" › ")}>${chainLabel(card)}</span>
      ${card.requires_user_proof ? html`<span class="lock" title="Allow needs the approver token">🔒 approver token</span>` : null}
      <${Countdown} at=${card.expires_at} />
    </header>
    <div class="what"><span class="tool">${card.tool}</span> <a href=${"#/s/" + (home?.id ?? card.home_session_id)}>asked in ${home?.name ?? card.home_session_id}</a></div>
    <div class="reason"><b>${card.inspector}</b>: ${card.reason}</div>
    ${card.will_fail ? html`<div class="will-fail warn" role="note">${card.will_fail}</div>` : null}
    ${card.replaces ? html`<div class="warn">a file changed after ${card.replaces} was allowed: this card asks about the new content</div>` : null}
    <${Args} args=${card.arguments} />
    ${card.files?.length ? html`<${Files} files=${card.files} />` : null}
    ${card.tool === "developer__write_file" || card.tool === "developer__edit_file" ? html`<${Preview} card=${card} />` : null}
    ${card.suggested_rule
      ? html`<div class="suggested">Allow for this session adds <code>${card.suggested_rule}</code>: matching calls anywhere in this session tree then run without asking (listed and removable at /sessions/:id/rules).</div>`
      : null}
    ${ui.error ? html`<div class="error" role="alert">${ui.error}</div>` : null}
    ${ui.askToken ? html`<${TokenField} card=${card} />` : null}
    <div class="buttons">
      <button class="allow" disabled=${inert || ui.busy} onClick=${() => void decide(card, "allow_once")}>Allow once</button>
      ${card.suggested_rule
        ? html`<button class="allow-session" title=${card.suggested_rule} disabled=${inert || ui.busy} onClick=${() => void decide(card, "allow_session")}>Allow for this session</button>`
        : null}
      <button class="deny" disabled=${inert || ui.busy} onClick=${() => void decide(card, "deny")}>Deny</button>
      <span class="rid muted">${card.request_id}</span>
    </div>
  </article>`;
}

const watched = new WeakSet<Element>();
const resized = typeof ResizeObserver === "undefined" ? null : new ResizeObserver(() => makeInert());

/** Arms the inert guard whenever the list's box changes size: a card grew (its diff loaded) and moved the ones below. */
function watchSize(el: Element | null): void {
  if (!el || !resized || watched.has(el)) return;
  watched.add(el);
  resized.observe(el);
}

/** A list of cards, oldest first; arms the inert guard when the list changes order or size. */
export function CardList({ cards, empty }: { cards: Card[]; empty?: string }) {
  noteOrder(cards.map((c) => c.request_id));
  if (!cards.length) return empty ? html`<p class="muted">${empty}</p>` : null;
  return html`<section class="cards" aria-label="pending cards" ref=${watchSize}>${cards.map((c) => html`<${CardView} key=${c.request_id} card=${c} />`)}</section>`;
}
