/**
 * @module console/fold
 * Long text folded, never silently cut: the first lines, then a button that shows all (with the count).
 */
import { h } from "preact";
import { useState } from "preact/hooks";
import htm from "htm";

const html = htm.bind(h);

/** JSON with two-space indentation; strings as they are. */
export function pretty(v: unknown): string {
  if (typeof v === "string") return v;
  try {
    return JSON.stringify(v, null, 2) ?? String(v);
  } catch {
    return String(v);
  }
}

/** A `<pre>` showing `lines` lines of `text` until "show all N lines" is pressed. */
export function Fold({ text, lines = 20, cls = "", render }: { text: string; lines?: number; cls?: string; render?: (t: string) => unknown }) {
  const [open, setOpen] = useState(false);
  const all = text.split("\n");
  if (all.length > 1 && all[all.length - 1] === "") all.pop(); // a final newline is not a line
  const long = all.length > lines;
  const shown = open || !long ? all.join("\n") : all.slice(0, lines).join("\n");
  return html`<div class=${"fold " + cls}>
    <pre>${render ? render(shown) : shown}</pre>
    ${long
      ? html`<button class="more" onClick=${() => setOpen(!open)}>${open ? "fold" : `show all ${all.length} lines (${all.length - lines} more)`}</button>`
      : null}
  </div>`;
}

/**
 * A tool call's arguments, every field in full: strings as they are (a file's content keeps its lines and
 * folds after `lines`), other values as JSON. Anything but an object is shown as JSON.
 */
export function Args({ args, lines = 20 }: { args: unknown; lines?: number }) {
  if (!args || typeof args !== "object" || Array.isArray(args)) return html`<${Fold} cls="args" text=${pretty(args)} lines=${lines} />`;
  const entries = Object.entries(args as Record<string, unknown>);
  if (!entries.length) return html`<div class="args-list muted">no arguments</div>`;
  return html`<dl class="args-list">${entries.map(
    ([k, v]) => html`<div class="arg" data-key=${k} key=${k}><dt>${k}</dt><dd><${Fold} cls="args" text=${typeof v === "string" ? v : pretty(v)} lines=${lines} /></dd></div>`,
  )}</dl>`;
}
