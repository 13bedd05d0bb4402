/**
 * @module scripts/bench/openapi
 * Time to serve `GET /openapi.json` over real HTTP on loopback (runtime + Hono server on port 0, fetch in
 * the same process): the first request of the process (the document is built, then cached; the connection
 * warmed on `/health` first), and p50 / p90 / max over N requests once it is cached. Also the document's size. Prints JSON. Usage: bun scripts/bench/openapi.ts [requests=100]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Config } from "../../src/config/schema.ts";
import { createRuntime } from "../../src/runtime.ts";
import { startServer } from "../../src/server/serve.ts";

const N = Number(process.argv[2] ?? 100);

function quantile(sorted: number[], q: number): number {
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[i]!;
}

const round = (ms: number) => Math.round(ms * 1000) / 1000;

async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), "airlock-bench-openapi-"));
  const rt = await createRuntime({ config: Config.parse({ limits: { script_workers: 1 }, provider: { name: "scripted", script: "none.yaml" } }), configDir: dataDir, dataDir, env: {} });
  const server = startServer(rt, { host: "127.0.0.1", port: 0 });
  const headers = { authorization: `Bearer ${rt.tokens.apiToken}` };
  try {
    const get = async () => {
      const t0 = performance.now();
      const res = await fetch(`${server.url}/openapi.json`, { headers });
      const text = await res.text();
      if (res.status !== 200) throw new Error(`GET /openapi.json: ${res.status} ${text}`);
      return { ms: performance.now() - t0, bytes: text.length };
    };
    // warm the connection and the server's request path on /health, so the first /openapi.json measures the build
    for (let i = 0; i < 5; i++) await (await fetch(`${server.url}/health`)).text();
    const first = await get();
    const samples: number[] = [];
    for (let i = 0; i < N; i++) samples.push((await get()).ms);
    samples.sort((a, b) => a - b);
    console.log(
      JSON.stringify({
        requests: N,
        document_bytes: first.bytes,
        first_request_uncached_ms: round(first.ms),
        cached_p50_ms: round(quantile(samples, 0.5)),
        cached_p90_ms: round(quantile(samples, 0.9)),
        cached_max_ms: round(samples.at(-1)!),
      }),
    );
  } finally {
    await rt.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
