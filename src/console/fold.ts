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
  const long = all.length > lines;
  const shown = open || !long ? text : all.slice(0, lines).join("\n");
  return html`<div class=${"fold " + cls}>
    <pre>${render ? render(shown) : shown}</pre>
    ${long
      ? html`<button class="more" onClick=${() => setOpen(!open)}>${open ? "fold" : `show all ${all.length} lines (${all.length - lines} more)`}</button>`
      : null}
  </div>`;
}
