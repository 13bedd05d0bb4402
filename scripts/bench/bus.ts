/**
 * @module scripts/bench/bus
 * Latency from `bus.publish` to an SSE client receiving the event, over real HTTP on loopback
 * (runtime + Hono server on port 0, clients parsing with eventsource-parser over fetch, in the same
 * process so one clock serves both ends). Runs with 1 and with 100 subscribers of one session.
 * Prints JSON: per subscriber count, median / p90 / p99 / max in ms over every (event, client) sample.
 * Usage: bun scripts/bench/bus.ts [events=300]
 */
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createParser } from "eventsource-parser";
import { Config } from "../../src/config/schema.ts";
import { createRuntime } from "../../src/runtime.ts";
import { startServer } from "../../src/server/serve.ts";

const EVENTS = Number(process.argv[2] ?? 300);

function quantile(sorted: number[], q: number): number {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[i]!;
}

async function measure(subscribers: number): Promise<Record<string, number>> {
  const dataDir = mkdtempSync(join(tmpdir(), "airlock-bench-bus-"));
  mkdirSync(join(dataDir, "ws"));
  const rt = await createRuntime({ config: Config.parse({ limits: { script_workers: 1 } }), configDir: dataDir, dataDir, env: {} });
  const server = startServer(rt, { host: "127.0.0.1", port: 0 });
  try {
    const session = await rt.createSession({ workspace: join(dataDir, "ws") });
    const samples: number[] = [];
    /** Per client: the highest seq received, and a waiter for "seq n arrived". */
    const clients: { seen: number; wake?: () => void; abort: AbortController }[] = [];
    const ready: Promise<void>[] = [];
    for (let i = 0; i < subscribers; i++) {
      const client: (typeof clients)[number] = { seen: -1, abort: new AbortController() };
      clients.push(client);
      let snapshotSeen!: () => void;
      ready.push(new Promise<void>((r) => (snapshotSeen = r)));
      const parser = createParser({
        onEvent(ev) {
          if (ev.event === "snapshot") return snapshotSeen();
          if (ev.event !== "delta") return;
          const now = performance.now();
          const [seq, t] = (JSON.parse(ev.data) as { text: string }).text.split(" ").map(Number) as [number, number];
          samples.push(now - t);
          client.seen = seq;
          client.wake?.();
        },
      });
      const res = await fetch(`${server.url}/sessions/${session.id}/events`, {
        headers: { authorization: `Bearer ${rt.tokens.apiToken}` },
        signal: client.abort.signal,
      });
      void (async () => {
        const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
        try {
          for (;;) {
            const { value, done } = await reader.read();
            if (done) break;
            parser.feed(value);
          }
        } catch {
          // aborted at the end of the run
        }
      })();
    }
    await Promise.all(ready);
    const allGot = (seq: number) =>
      Promise.all(
        clients.map(
          (c) =>
            new Promise<void>((resolve) => {
              if (c.seen >= seq) return resolve();
              c.wake = () => {
                if (c.seen >= seq) {
                  c.wake = undefined;
                  resolve();
                }
              };
            }),
        ),
      );
    for (let seq = 0; seq < EVENTS; seq++) {
      const got = allGot(seq);
      rt.bus.publish(session.id, "delta", { session_id: session.id, turn_id: "turn_bench", text: `${seq} ${performance.now()}` });
      await got;
    }
    for (const c of clients) c.abort.abort();
    samples.sort((a, b) => a - b);
    const r = (x: number) => Math.round(x * 1000) / 1000;
    return {
      subscribers,
      events: EVENTS,
      samples: samples.length,
      median_ms: r(quantile(samples, 0.5)),
      p90_ms: r(quantile(samples, 0.9)),
      p99_ms: r(quantile(samples, 0.99)),
      max_ms: r(samples[samples.length - 1]!),
    };
  } finally {
    await rt.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

const results = [];
for (const n of [1, 100]) results.push(await measure(n));
console.log(JSON.stringify({ bench: "bus publish → SSE client", transport: "HTTP/1.1 loopback, same process", bun: Bun.version, results }, null, 2));
