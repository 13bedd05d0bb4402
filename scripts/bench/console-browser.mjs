/**
 * @module scripts/bench/console-browser
 * The console's figures, measured in Debian's chromium (playwright-core, under Node) against the compiled
 * binary; prints one JSON object. Run by scripts/bench/console.ts.
 * - park → drawn: for each of N cards, the time from the card's park (its `expires_at` minus the TTL) to
 *   the browser's `card:<request_id>` performance mark, set when the card's element is first in the DOM;
 * - transferred bytes of the page, its script and its style, gzip as served;
 * - the page's JS heap (after a forced GC) on load and after 10,000 events of one session.
 * Usage: node console-browser.mjs '{"bin": "...", "tmp": "...", "cards": 100, "events": 10000}'
 */
import { request } from "node:http";
import { api, launchBrowser, setup, startServer, startTurn, stopServer, until } from "../../test/e2e/console/servers.mjs";

const opts = JSON.parse(process.argv[2]);
const N = opts.cards ?? 100;
const EVENTS = opts.events ?? 10_000;
const TTL_S = 3600;
const T = 60_000;

/** The bytes a path takes on the wire with `Accept-Encoding: gzip`. */
function wireBytes(url) {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers: { "accept-encoding": "gzip" } }, (res) => {
      let n = 0;
      res.on("data", (d) => (n += d.length));
      res.on("end", () => resolve({ bytes: n, encoding: res.headers["content-encoding"] ?? "identity" }));
    });
    req.on("error", reject);
    req.end();
  });
}

const pct = (xs, p) => xs[Math.min(xs.length - 1, Math.ceil((p / 100) * xs.length) - 1)];

const ask = setup(opts.tmp, "bench-cards", { mode: "approve", script: `turns:\n  - tool_calls: [{ name: developer__list_dir, arguments: { path: "." } }]\n  - text: done\n` });
// Each script makes CALLS list_dir calls (2 events each); the turn runs enough scripts for EVENTS events.
const CALLS = 500;
const scripts = Math.ceil(EVENTS / (2 * CALLS));
const code = `for (let i = 0; i < ${CALLS}; i++) await tools.developer__list_dir({ path: "." }); return "ok";`;
const loud = setup(opts.tmp, "bench-events", {
  mode: "autonomous",
  script: `turns:\n  - tool_calls: [${Array.from({ length: scripts }, () => JSON.stringify({ name: "code_execution__execute", arguments: { code } })).join(", ")}]\n  - text: done\n`,
});

const srv = await startServer(opts.bin, ask.dataDir, ask.workspace);
const context = await launchBrowser();
const page = await context.newPage();
await page.goto(srv.link);
await page.waitForSelector('.top .conn[data-state="live"]', { timeout: T });

const lat = [];
for (let i = 0; i < N; i++) {
  const s = await startTurn(srv);
  const card = await until("a card", async () => (await api(srv, "GET", `/sessions/${s.id}/actions`)).body.actions[0], T);
  const drawnAt = await page.waitForFunction((rid) => {
    const m = performance.getEntriesByName(`card:${rid}`)[0];
    return m ? performance.timeOrigin + m.startTime : null;
  }, card.request_id, { timeout: T, polling: 20 });
  const parkedAt = Date.parse(card.expires_at) - TTL_S * 1000;
  lat.push((await drawnAt.jsonValue()) - parkedAt);
  await api(srv, "POST", `/sessions/${s.id}/actions/${card.request_id}`, { decision: "deny" });
}
lat.sort((a, b) => a - b);

const files = {};
for (const p of ["/", "/console.js", "/console.css"]) files[p] = await wireBytes(srv.url + p);
await context.close();
await stopServer(srv);

// Memory: a session view receiving EVENTS events.
const srv2 = await startServer(opts.bin, loud.dataDir, loud.workspace);
const ctx2 = await launchBrowser();
const page2 = await ctx2.newPage();
const cdp = await ctx2.newCDPSession(page2);
await cdp.send("Performance.enable");
const heap = async () => {
  await cdp.send("HeapProfiler.collectGarbage");
  const m = (await cdp.send("Performance.getMetrics")).metrics;
  return { js_heap_used_bytes: m.find((x) => x.name === "JSHeapUsedSize")?.value, dom_nodes: m.find((x) => x.name === "Nodes")?.value };
};
const sess = await api(srv2, "POST", "/sessions", {});
await page2.goto(srv2.link.replace("#t=", `#t=`));
await page2.waitForSelector('.top .conn[data-state="live"]', { timeout: T });
await page2.evaluate((id) => (location.hash = `#/s/${id}`), sess.body.id);
await page2.waitForSelector('.session .conn[data-state="live"]', { timeout: T });
const before = await heap();
const t0 = Date.now();
await fetch(`${srv2.url}/sessions/${sess.body.id}/reply`, { method: "POST", headers: { authorization: `Bearer ${srv2.token}`, "content-type": "application/json" }, body: JSON.stringify({ message: "go" }) }).then((r) => r.text());
await page2.waitForFunction((n) => window.airlockConsole.view.events >= n && !window.airlockConsole.view.inFlight, EVENTS, { timeout: 300_000, polling: 200 });
const events = await page2.evaluate(() => window.airlockConsole.view.events);
const after = await heap();
const seconds = (Date.now() - t0) / 1000;
await ctx2.close();
await stopServer(srv2);

const gzip = Object.values(files).reduce((n, f) => n + f.bytes, 0);
console.log(
  JSON.stringify({
    park_to_drawn_ms: { cards: N, p50: Math.round(pct(lat, 50) * 10) / 10, p99: Math.round(pct(lat, 99) * 10) / 10, max: Math.round(lat[lat.length - 1] * 10) / 10 },
    transfer_gzip_bytes: { total: gzip, html: files["/"].bytes, js: files["/console.js"].bytes, css: files["/console.css"].bytes, encoding: files["/console.js"].encoding },
    memory: { events, seconds_to_receive: Math.round(seconds * 10) / 10, on_load: before, after_events: after },
  }),
);
