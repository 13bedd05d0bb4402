/**
 * @module test/harness
 * Cross-module test helpers: a real runtime + HTTP server on an ephemeral loopback port with a temp
 * data dir and workspace, an authenticated `api()` fetch, and an SSE client (eventsource-parser over
 * fetch) that waits on events instead of sleeping.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { createParser } from "eventsource-parser";
import { Config } from "../src/config/schema.ts";
import { createRuntime, type Runtime } from "../src/runtime.ts";
import { startServer, type ServerHandle } from "../src/server/serve.ts";

export interface HarnessOptions {
  /** airlock.yaml content as an object (validated with the real schema). */
  config?: Record<string, unknown>;
  /** Files to write into the config dir (= data dir) before start, e.g. `{"turns.yaml": "..."}`. */
  files?: Record<string, string>;
  /** Files to write into the workspace. */
  workspaceFiles?: Record<string, string>;
  heartbeatMs?: number;
  /** Reuse a data dir (restart tests); default a new temp dir, removed on close. */
  dataDir?: string;
  env?: Record<string, string | undefined>;
}

export interface Harness {
  rt: Runtime;
  server: ServerHandle;
  url: string;
  token: string;
  dataDir: string;
  workspace: string;
  /** fetch against the server with the bearer token (unless `init.headers.authorization` is given). */
  api(path: string, init?: RequestInit & { json?: unknown }): Promise<Response>;
  /** Creates a session over HTTP and returns it. */
  createSession(body?: Record<string, unknown>): Promise<{ id: string } & Record<string, unknown>>;
  close(): Promise<void>;
}

/** Starts a runtime and its server on 127.0.0.1:0. Always `await h.close()` (in afterEach/finally). */
export async function startHarness(o: HarnessOptions = {}): Promise<Harness> {
  const ownDir = !o.dataDir;
  const dataDir = o.dataDir ?? mkdtempSync(join(tmpdir(), "airlock-test-"));
  const workspace = join(dataDir, "workspace");
  mkdirSync(workspace, { recursive: true });
  for (const [name, text] of Object.entries(o.files ?? {})) writeFileSync(join(dataDir, name), text);
  for (const [name, text] of Object.entries(o.workspaceFiles ?? {})) {
    mkdirSync(dirname(join(workspace, name)), { recursive: true });
    writeFileSync(join(workspace, name), text);
  }
  const config = Config.parse(o.config ?? {});
  const rt = await createRuntime({ config, configDir: dataDir, dataDir, env: o.env ?? {}, providerRetry: { baseDelayMs: 1, maxDelayMs: 5 } });
  let server: ServerHandle;
  try {
    server = startServer(rt, { host: "127.0.0.1", port: 0, heartbeatMs: o.heartbeatMs });
  } catch (e) {
    await rt.close();
    throw e;
  }
  const token = rt.tokens.apiToken;
  const api = (path: string, init: RequestInit & { json?: unknown } = {}) => {
    const headers = new Headers(init.headers);
    if (!headers.has("authorization")) headers.set("authorization", `Bearer ${token}`);
    let body = init.body;
    if (init.json !== undefined) {
      body = JSON.stringify(init.json);
      headers.set("content-type", "application/json");
    }
    return fetch(server.url + path, { ...init, headers, body });
  };
  return {
    rt,
    server,
    url: server.url,
    token,
    dataDir,
    workspace,
    api,
    async createSession(body = {}) {
      const res = await api("/sessions", { method: "POST", json: { workspace, ...body } });
      if (res.status !== 201) throw new Error(`POST /sessions: ${res.status} ${await res.text()}`);
      return (await res.json()) as { id: string };
    },
    async close() {
      await rt.close();
      if (ownDir) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export interface SseEvent {
  event: string;
  id?: string;
  /** Parsed JSON payload. */
  data: any;
}

/** A live SSE stream: every event received so far, and a way to wait for the next matching one. */
export interface SseStream {
  status: number;
  events: SseEvent[];
  /** Resolves with the first event (already received or future) matching `pred`; rejects when the stream ends first or after `timeoutMs` (default 20 s). */
  waitFor(pred: (e: SseEvent) => boolean, timeoutMs?: number): Promise<SseEvent>;
  /** Resolves when the server ends the stream. */
  ended: Promise<void>;
  /** Heartbeat comments seen. */
  comments: () => number;
  close(): void;
}

/** Opens an SSE request (GET or POST) and parses the stream with eventsource-parser. */
export async function openSse(url: string, init: RequestInit = {}): Promise<SseStream> {
  const ac = new AbortController();
  const res = await fetch(url, { ...init, signal: ac.signal });
  const events: SseEvent[] = [];
  let comments = 0;
  const waiters: { pred: (e: SseEvent) => boolean; resolve: (e: SseEvent) => void; reject: (e: Error) => void }[] = [];
  const parser = createParser({
    onEvent(msg) {
      const ev: SseEvent = { event: msg.event ?? "message", id: msg.id, data: msg.data ? JSON.parse(msg.data) : null };
      events.push(ev);
      for (const w of [...waiters]) {
        if (w.pred(ev)) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve(ev);
        }
      }
    },
    onComment() {
      comments++;
    },
  });
  let isEnded = false;
  const ended = (async () => {
    if (!res.body || !res.headers.get("content-type")?.includes("text/event-stream")) return;
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        parser.feed(value);
      }
    } catch {
      // aborted by close()
    }
  })().finally(() => {
    isEnded = true;
    for (const w of waiters.splice(0)) w.reject(new Error(`SSE stream ended before the awaited event; got: ${events.map((e) => e.event).join(", ")}`));
  });
  return {
    status: res.status,
    events,
    ended,
    comments: () => comments,
    waitFor(pred, timeoutMs = 20_000) {
      const hit = events.find(pred);
      if (hit) return Promise.resolve(hit);
      if (isEnded) return Promise.reject(new Error(`SSE stream already ended; got: ${events.map((e) => e.event).join(", ")}`));
      return new Promise<SseEvent>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no matching SSE event within ${timeoutMs} ms; got: ${events.map((e) => e.event).join(", ")}`)), timeoutMs);
        waiters.push({
          pred,
          resolve: (e) => {
            clearTimeout(timer);
            resolve(e);
          },
          reject: (e) => {
            clearTimeout(timer);
            reject(e);
          },
        });
      });
    },
    close() {
      ac.abort();
    },
  };
}

/** `openSse` against a harness path with its token. */
export function harnessSse(h: Harness, path: string, init: RequestInit & { json?: unknown } = {}): Promise<SseStream> {
  const headers = new Headers(init.headers);
  headers.set("authorization", `Bearer ${h.token}`);
  let body = init.body;
  if (init.json !== undefined) {
    body = JSON.stringify(init.json);
    headers.set("content-type", "application/json");
  }
  return openSse(h.url + path, { ...init, headers, body });
}

/** Resolves when `cond()` is true, checking on each bus event of any session (no sleeping). */
export function waitForBus(rt: Runtime, cond: () => boolean, timeoutMs = 20_000): Promise<void> {
  if (cond()) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      off();
      reject(new Error(`condition not met within ${timeoutMs} ms`));
    }, timeoutMs);
    const off = rt.bus.subscribeAll(() => {
      if (cond()) {
        clearTimeout(timer);
        off();
        resolve();
      }
    });
  });
}
