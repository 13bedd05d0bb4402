/**
 * The console's routes over real HTTP (issue 15): the page, script and style are served without the bearer
 * token but with a strict CSP and the Host check; the feed needs the token (never from a query string),
 * opens with a snapshot and sends each card once, with its chain, to be answered from the root;
 * `airlock console` prints the link with the token in the fragment.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { gunzipSync } from "node:zlib";
import { join } from "node:path";
import { CONSOLE_CSP } from "../../src/console/routes.ts";
import { harnessSse, startHarness, type Harness } from "../harness.ts";

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const CHAIN = `
turns:
  - tool_calls: [{ name: subagent__spawn, arguments: { instructions: "plan" } }]
  - text: "root done"
subagents:
  - turns:
      - tool_calls: [{ name: subagent__spawn, arguments: { instructions: "do" } }]
      - text: "planner done"
  - turns:
      - tool_calls: [{ name: developer__shell, arguments: { command: "touch made-by-child" } }]
      - text: "child done"
`;

describe("console routes", () => {
  test("GET /, /console.js and /console.css need no token, carry the CSP, hold no inline script or style, and gzip", async () => {
    h = await startHarness();
    const page = await fetch(`${h.url}/`);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-security-policy")).toBe(CONSOLE_CSP);
    expect(CONSOLE_CSP).toContain("default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:");
    expect(page.headers.get("x-content-type-options")).toBe("nosniff");
    const html = await page.text();
    expect(html).toContain('<script type="module" src="/console.js"></script>');
    expect(html.match(/<script\b[^>]*>/g)).toEqual(['<script type="module" src="/console.js">']);
    expect(html).not.toMatch(/\sstyle=|<style|\son[a-z]+=/i);
    expect(html).not.toContain(h.token);
    const js = await fetch(`${h.url}/console.js`);
    expect([js.status, js.headers.get("content-type")]).toEqual([200, "text/javascript; charset=utf-8"]);
    const jsText = await js.text();
    expect(jsText.length).toBeGreaterThan(1000);
    expect(jsText).not.toContain(h.token);
    const css = await fetch(`${h.url}/console.css`);
    expect([css.status, css.headers.get("content-type")]).toEqual([200, "text/css; charset=utf-8"]);
    const gz = await fetch(`${h.url}/console.js`, { headers: { "accept-encoding": "gzip" }, decompress: false } as RequestInit);
    expect(gz.headers.get("content-encoding")).toBe("gzip");
    expect(gunzipSync(Buffer.from(await gz.arrayBuffer())).toString("utf8")).toBe(jsText);
  });

  test("the Host check applies to the page as to the API; other paths still need the token", async () => {
    h = await startHarness();
    const evil = await fetch(`${h.url}/`, { headers: { host: "evil.example" } });
    expect(evil.status).toBe(421);
    expect((await fetch(`${h.url}/console.js`, { headers: { host: "attacker.test:80" } })).status).toBe(421);
    expect((await fetch(`${h.url}/sessions`)).status).toBe(401);
    expect((await fetch(`${h.url}/index.html`)).status).toBe(401);
    expect((await fetch(`${h.url}/console/events`)).status).toBe(401);
    expect((await fetch(`${h.url}/console/events?token=${h.token}`)).status).toBe(401);
    expect((await fetch(`${h.url}/console/events?t=${h.token}`)).status).toBe(401);
  });

  test("the feed opens with a snapshot and sends a grandchild's card once, with its chain, answerable from the root", async () => {
    h = await startHarness({ config: { provider: { name: "scripted", script: "turns.yaml" }, mode: "smart" }, files: { "turns.yaml": CHAIN } });
    const feed = await harnessSse(h, "/console/events");
    const snap = await feed.waitFor((e) => e.event === "snapshot");
    expect(snap.data).toEqual({ sessions: [], in_flight: [], pending_actions: [] });
    const root = await h.createSession();
    const reply = await harnessSse(h, `/sessions/${root.id}/reply`, { method: "POST", json: { message: "go" } });
    const card = (await feed.waitFor((e) => e.event === "action_required")).data;
    const [child] = await h.rt.store.listSessions({ parent: root.id as string });
    const [grandchild] = await h.rt.store.listSessions({ parent: child!.id });
    expect(card).toMatchObject({
      home_session_id: grandchild!.id,
      tool: "developer__shell",
      arguments: { command: "touch made-by-child" },
      answer_in: root.id,
      surfaced_in: root.id,
      chain: [
        { id: root.id, name: "root" },
        { id: child!.id, name: "subagent#0" },
        { id: grandchild!.id, name: "subagent#1" },
      ],
    });
    // A late feed sees the same card in its snapshot.
    const late = await harnessSse(h, "/console/events");
    const lateSnap = (await late.waitFor((e) => e.event === "snapshot")).data;
    expect(lateSnap.pending_actions).toEqual([card]);
    expect(lateSnap.in_flight.sort()).toEqual([root.id, child!.id, grandchild!.id].sort());
    const res = await h.api(`/sessions/${root.id}/actions/${card.request_id}`, { method: "POST", json: { decision: "deny" } });
    expect(res.status).toBe(200);
    await reply.waitFor((e) => e.event === "turn_finished");
    const resolved = await feed.waitFor((e) => e.event === "action_resolved");
    expect(resolved.data).toMatchObject({ request_id: card.request_id, decision: "deny" });
    await feed.waitFor((e) => e.event === "turn_finished" && e.data.session_id === root.id);
    expect(feed.events.filter((e) => e.event === "action_required").length).toBe(1);
    expect(feed.events.filter((e) => e.event === "action_resolved").length).toBe(1);
    feed.close();
    late.close();
    reply.close();
  });

  test("airlock console prints the link with the API token in the fragment; a warning when no server answers there", async () => {
    h = await startHarness();
    const consoleCli = async (url: string) => {
      const proc = Bun.spawn([process.execPath, join(import.meta.dir, "..", "..", "src", "main.ts"), "console", "--data-dir", h!.dataDir, "--url", url], {
        stdout: "pipe",
        stderr: "pipe",
        env: { PATH: process.env.PATH },
      });
      const [code, out, err] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
      return { code, out, err };
    };
    // the harness's server answers: the link alone
    expect(await consoleCli(`${h.url}/`)).toEqual({ code: 0, out: `${h.url}/#t=${h.token}\n`, err: "" });
    // nothing listens there: the same link, and stderr says the link will not open and what to do
    const none = await consoleCli("http://127.0.0.1:5123/");
    expect({ code: none.code, out: none.out }).toEqual({ code: 0, out: `http://127.0.0.1:5123/#t=${h.token}\n` });
    expect(none.err).toStartWith(
      "airlock: warning: no airlock serve answers at http://127.0.0.1:5123 now: the connection was refused, so nothing listens on that port. The link above opens only once a server listens there.\n" +
        "  The URL came from --url.\n",
    );
    expect(none.err).toContain(`To start one, run in another terminal: airlock serve --data-dir ${h.dataDir}`);
  });
});
