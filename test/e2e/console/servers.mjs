/**
 * @module test/e2e/console/servers
 * Node helpers for the console's browser tests and bench: start the compiled `airlock serve` on a data dir
 * (waiting for its "listening on" line), call its API, start turns, and launch Debian's chromium through
 * playwright-core with a fresh profile.
 */
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

/** The flags chromium runs with in tests (no network side traffic, no GPU, no sandbox inside containers). */
export const CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"];

/** A fresh chromium profile and one page. */
export async function launchBrowser() {
  const profile = mkdtempSync(join(tmpdir(), "airlock-chromium-"));
  const context = await chromium.launchPersistentContext(profile, { executablePath: "/usr/bin/chromium", args: CHROMIUM_FLAGS, headless: true, viewport: { width: 1280, height: 1400 } });
  return context;
}

/**
 * Writes a data dir (`airlock.yaml` with the scripted provider replaying `script`) and a workspace with `files`.
 * Returns their paths.
 */
export function setup(root, name, { script, mode = "smart", files = {} }) {
  const dataDir = join(root, name, "data");
  const workspace = join(root, name, "ws");
  mkdirSync(dataDir, { recursive: true });
  mkdirSync(workspace, { recursive: true });
  writeFileSync(join(dataDir, "turns.yaml"), script);
  writeFileSync(join(dataDir, "airlock.yaml"), `provider: { name: scripted, script: turns.yaml }\nmode: ${mode}\nsandbox: workspace-write\n`);
  for (const [p, c] of Object.entries(files)) writeFileSync(join(workspace, p), c);
  return { dataDir, workspace };
}

/** Starts `bin serve` on `port` (0 = free) for `dataDir`; resolves once it listens. */
export function startServer(bin, dataDir, workspace, port = 0) {
  return new Promise((resolve, reject) => {
    const proc = spawn(bin, ["serve", "--port", String(port), "--data-dir", dataDir], { cwd: workspace, stdio: ["ignore", "ignore", "pipe"], env: { PATH: "/usr/bin:/bin", HOME: workspace } });
    let seen = "";
    let done = false;
    proc.stderr.setEncoding("utf8");
    proc.stderr.on("data", (d) => {
      seen += d;
      const m = /listening on (http:\/\/\S+)/.exec(seen);
      if (m && !done) {
        done = true;
        const token = readFileSync(join(dataDir, "api-token"), "utf8").trim();
        const approver = readFileSync(join(dataDir, "approver-token"), "utf8").trim();
        const link = /console: (http:\/\/\S+)/.exec(seen)?.[1];
        resolve({ proc, url: m[1], port: Number(new URL(m[1]).port), token, approver, link, stderr: () => seen });
      }
    });
    proc.on("exit", (code) => {
      if (!done) reject(new Error(`airlock serve exited ${code} before listening:\n${seen}`));
    });
  });
}

/** Stops a server with SIGTERM and waits for it to exit. */
export function stopServer(srv) {
  return new Promise((resolve) => {
    if (srv.proc.exitCode !== null) return resolve();
    srv.proc.once("exit", () => resolve());
    srv.proc.kill("SIGTERM");
  });
}

/**
 * fetch, tried again once when the connection failed before an answer (a kept-alive socket to a server that
 * was restarted on the same port).
 */
async function fetchRetry(url, init) {
  try {
    return await fetch(url, init);
  } catch (e) {
    if (e?.message !== "fetch failed") throw e;
    return fetch(url, init);
  }
}

/** One API call: `{status, body}`. */
export async function api(srv, method, path, body, headers = {}) {
  const res = await fetchRetry(srv.url + path, {
    method,
    headers: { authorization: `Bearer ${srv.token}`, ...(body === undefined ? {} : { "content-type": "application/json" }), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

/** Creates a root session and starts a turn with `message` (the turn's stream is dropped; the turn goes on). */
export async function startTurn(srv, message = "go", extra = {}) {
  const s = await api(srv, "POST", "/sessions", extra);
  if (s.status !== 201) throw new Error(`POST /sessions: ${s.status} ${JSON.stringify(s.body)}`);
  const res = await fetchRetry(`${srv.url}/sessions/${s.body.id}/reply`, {
    method: "POST",
    headers: { authorization: `Bearer ${srv.token}`, "content-type": "application/json" },
    body: JSON.stringify({ message }),
  });
  if (res.status !== 200) throw new Error(`reply: ${res.status} ${await res.text()}`);
  void res.body.cancel().catch(() => {});
  return s.body;
}

/** Polls `fn` (async, truthy = done) every 50 ms until it is truthy or `ms` pass; throws naming `what`. */
export async function until(what, fn, ms = 30_000) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
