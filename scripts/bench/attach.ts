/**
 * @module scripts/bench/attach
 * `airlock attach`, measured (prints JSON): latency from a card parked on a subagent until the BEL byte
 * reaches the reader of an attached `airlock attach --plain` (a real process reading the server's SSE over
 * loopback, its stdout a pipe), p50/p99 in ms over `--cards` cards (default 100, after 10 warm-up cards);
 * beside it, the floor: the same park until a bare SSE client of `GET /console/events` (the stream attach
 * reads cards from) gets the card.
 * Usage: `bun scripts/bench/attach.ts [--cards 100]`
 */
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { createParser } from "eventsource-parser";
import { Config } from "../../src/config/schema.ts";
import { newId } from "../../src/ids.ts";
import { createRuntime } from "../../src/runtime.ts";
import { startServer } from "../../src/server/serve.ts";
import { arg } from "./args.ts";

const CARDS = arg("--cards", 100);
const WARMUP = 10;

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}
const round = (x: number, d = 3): number => Math.round(x * 10 ** d) / 10 ** d;
const stats = (xs: number[]): { p50_ms: number; p99_ms: number; max_ms: number; samples: number } => {
  const s = [...xs].sort((a, b) => a - b);
  return { p50_ms: round(pct(s, 50)), p99_ms: round(pct(s, 99)), max_ms: round(s[s.length - 1]!), samples: s.length };
};

/** Resolves when `cond()` holds (checked when `poke` is called), or rejects after `ms`. */
function until(cond: () => boolean, ms: number, what: string): { done: Promise<void>; poke: () => void } {
  let resolve!: () => void;
  let reject!: (e: Error) => void;
  const done = new Promise<void>((res, rej) => ((resolve = res), (reject = rej)));
  const t = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), ms);
  const poke = (): void => {
    if (cond()) {
      clearTimeout(t);
      resolve();
    }
  };
  poke();
  return { done, poke };
}

const dataDir = mkdtempSync(join(tmpdir(), "airlock-bench-attach-"));
const rt = await createRuntime({ config: Config.parse({}), configDir: dataDir, dataDir, env: {} });
const server = startServer(rt, { host: "127.0.0.1", port: 0 });
let attach: Bun.Subprocess<"pipe", "pipe", "inherit"> | undefined;
try {
  const base = { workspace: dataDir, mode: "smart", sandbox: "workspace-write", privacy: "public", headless: false, provider: "scripted" } as const;
  const root = await rt.store.createSession(base);
  const child = await rt.store.createSession({ ...base, parent_session_id: root.id });
  const turnId = newId("turn");
  rt.inflight.register(child.id, turnId);

  // the floor: a bare client of the console feed
  const feedArrivals = new Map<string, number>();
  let pokeFeed = (): void => {};
  const res = await fetch(`${server.url}/console/events`, { headers: { authorization: `Bearer ${rt.tokens.apiToken}` } });
  const parser = createParser({
    onEvent(m) {
      if (m.event === "action_required") {
        feedArrivals.set(JSON.parse(m.data).request_id, performance.now());
        pokeFeed();
      }
    },
  });
  const feedReader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  void (async () => {
    for (;;) {
      const { value, done } = await feedReader.read();
      if (done) break;
      parser.feed(value);
    }
  })().catch(() => {});

  // airlock attach --plain, its stdout a pipe: the time each BEL byte is read
  attach = Bun.spawn([process.execPath, join(import.meta.dir, "../../src/main.ts"), "attach", root.id, "--plain", "--data-dir", dataDir, "--url", server.url], {
    stdin: "pipe",
    stdout: "pipe",
    stderr: "inherit",
  });
  const bells: number[] = [];
  let text = "";
  let pokeAttach = (): void => {};
  void (async () => {
    for await (const chunk of attach!.stdout) {
      const now = performance.now();
      for (const b of chunk) if (b === 7) bells.push(now);
      text += new TextDecoder().decode(chunk);
      pokeAttach();
    }
  })();
  const ready = until(() => text.includes("attached to"), 60_000, "attach to connect");
  pokeAttach = ready.poke;
  await ready.done;

  const toBel: number[] = [];
  const toFeed: number[] = [];
  for (let i = 0; i < CARDS + WARMUP; i++) {
    const bellsBefore = bells.length;
    let id = "";
    const off = rt.bus.subscribe(child.id, (ev) => {
      if (ev.type === "action_required") id = ev.data.request_id;
    });
    const t0 = performance.now();
    void rt.cards.park({ homeSessionId: child.id, turnId, callId: newId("call"), tool: "developer__shell", arguments: { command: `touch f${i}` }, inspector: "mode", reason: "bench", requiresUserProof: false, ttlSeconds: 3600 });
    off();
    const bel = until(() => bells.length > bellsBefore, 30_000, `the BEL of card ${i}`);
    pokeAttach = bel.poke;
    const feed = until(() => feedArrivals.has(id), 30_000, `card ${i} on the feed`);
    pokeFeed = feed.poke;
    await Promise.all([bel.done, feed.done]);
    if (i >= WARMUP) {
      toBel.push(bells[bellsBefore]! - t0);
      toFeed.push(feedArrivals.get(id)! - t0);
    }
    const mark = text.length;
    await rt.cards.resolve(id, "deny", { sessionId: root.id });
    // the next card only once attach has printed this one's end (so each BEL is its own card's)
    const gone = until(() => text.indexOf(id, mark) >= 0, 30_000, `attach to drop card ${i}`);
    pokeAttach = gone.poke;
    await gone.done;
  }
  await feedReader.cancel().catch(() => {});
  console.log(
    JSON.stringify(
      {
        bench: "attach",
        park_to_bel_attach_plain: stats(toBel),
        park_to_console_feed_bare_client: stats(toFeed),
        machine: { cpus: cpus().length, model: cpus()[0]?.model },
        note: "attach --plain as a process (bun src/main.ts) reading the console feed over loopback; the BEL is timed when the bench reads it from attach's stdout pipe",
      },
      null,
      2,
    ),
  );
} finally {
  attach?.kill("SIGTERM");
  await attach?.exited;
  server.stop?.();
  await rt.close();
  rmSync(dataDir, { recursive: true, force: true });
}
process.exit(0);
