/**
 * @module console/schedules
 * Schedules: the list, each one's run history with its result objects, and "run now".
 */
import { h } from "preact";
import { useEffect, useState } from "preact/hooks";
import htm from "htm";
import { Fold, pretty } from "./fold.ts";
import { api } from "./net.ts";
import { notice } from "./state.ts";

const html = htm.bind(h);

function Runs({ id, bump }: { id: string; bump: number }) {
  const [runs, setRuns] = useState<any[] | null>(null);
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    void api("GET", `/schedules/${encodeURIComponent(id)}/runs?limit=20`).then((r) => {
      if (!live) return;
      const list = r.status === 200 ? (r.body.runs as any[]) : [];
      setRuns(list);
      // While a run goes on, look again every second.
      if (list.some((x) => x.status === "running")) timer = setTimeout(() => setTick((n) => n + 1), 1000);
    });
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [id, bump, tick]);
  if (!runs) return html`<p class="muted">loading runs…</p>`;
  if (!runs.length) return html`<p class="muted">no runs yet</p>`;
  return html`<ol class="runs">${runs.map(
    (r) => html`<li key=${r.run_id}><span class=${"state " + r.status}>${r.status}</span> ${r.trigger} ${r.started_at}
      ${r.session_id ? html` <a href=${"#/s/" + r.session_id}>session</a>` : null}
      <${Fold} cls="result" lines=${8} text=${pretty(r)} /></li>`,
  )}</ol>`;
}

/** The schedules page. */
export function Schedules() {
  const [list, setList] = useState<any[] | null>(null);
  const [open, setOpen] = useState<string | null>(null);
  const [bump, setBump] = useState(0);
  useEffect(() => {
    void api("GET", "/schedules").then((r) => setList(r.status === 200 ? r.body.schedules : []));
  }, [bump]);
  return html`<main class="schedules">
    <h1>schedules</h1>
    ${!list
      ? html`<p class="muted">loading…</p>`
      : !list.length
        ? html`<p class="muted">No schedules. Add one with <code>airlock schedule add --cron EXPR --recipe FILE</code>.</p>`
        : html`<ul class="schedule-list">${list.map(
            (s) => html`<li key=${s.id} data-schedule-id=${s.id}>
              <b>${s.name ?? s.id}</b> <code>${s.cron}</code> <span class="muted">${s.id}</span>
              <button onClick=${async () => {
                const r = await api("POST", `/schedules/${encodeURIComponent(s.id)}/run`);
                notice(r.status === 202 ? `run ${r.body.run_id} started` : `run now: ${r.status} ${r.body?.message ?? ""}`, r.status === 202 ? "info" : "warn");
                setOpen(s.id);
                setBump(bump + 1);
              }}>Run now</button>
              <button onClick=${() => setOpen(open === s.id ? null : s.id)}>${open === s.id ? "hide runs" : "runs"}</button>
              ${open === s.id ? html`<${Runs} id=${s.id} bump=${bump} /><button onClick=${() => setBump(bump + 1)}>refresh</button>` : null}
            </li>`,
          )}</ul>`}
  </main>`;
}
