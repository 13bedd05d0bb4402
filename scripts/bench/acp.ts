/**
 * @module scripts/bench/acp
 * `airlock acp`, measured (prints JSON): from sending `session/prompt` to the compiled binary over its stdin
 * until the SDK client gets the first `session/update` (the model's text as an `agent_message_chunk`), against
 * the HTTP path on the same binary: from sending `POST /sessions/:id/reply` until its SSE body brings the first
 * event (`turn_started`) and the first `delta` (the same model text). One fresh session per sample, the
 * scripted model answering at once; p50/p99 in ms over `--samples` (default 100, after 10 warm-up).
 * Usage: `bun scripts/bench/acp.ts [--samples 100]`
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as acp from "@agentclientprotocol/sdk";
import { build, OUTFILE } from "../../build/build.ts";
import { arg } from "./args.ts";

const SAMPLES = arg("--samples", 100);
const WARMUP = 10;
const round = (x: number, d = 3): number => Math.round(x * 10 ** d) / 10 ** d;
const stats = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const pct = (p: number) => s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
  return { p50_ms: round(pct(50)), p99_ms: round(pct(99)), max_ms: round(s[s.length - 1]!), samples: s.length };
};

await build();
const dir = mkdtempSync(join(tmpdir(), "airlock-bench-acp-"));
const ws = join(dir, "ws");
mkdirSync(ws);
writeFileSync(join(dir, "airlock.yaml"), "mode: smart\nprovider: { name: scripted, script: turns.yaml }\n");
writeFileSync(join(dir, "turns.yaml"), 'turns:\n  - text: "hello"\n');
const env = { PATH: "/usr/bin:/bin", HOME: dir };

async function benchAcp(): Promise<number[]> {
  const proc = Bun.spawn([OUTFILE, "acp", "--data-dir", dir, "--config", join(dir, "airlock.yaml")], { cwd: ws, stdin: "pipe", stdout: "pipe", stderr: "ignore", env });
  const output = new WritableStream<Uint8Array>({
    async write(c) {
      proc.stdin.write(c);
      await proc.stdin.flush();
    },
  });
  let first: (() => void) | undefined;
  const app = acp.client({ name: "bench" }).onNotification(acp.methods.client.session.update, () => {
    first?.();
    first = undefined;
  });
  const out: number[] = [];
  try {
    await app.connectWith(acp.ndJsonStream(output, proc.stdout), async (ctx) => {
      await ctx.request(acp.methods.agent.initialize, { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: {} });
      for (let i = 0; i < WARMUP + SAMPLES; i++) {
        const { sessionId } = await ctx.request(acp.methods.agent.session.new, { cwd: ws, mcpServers: [] });
        const got = new Promise<number>((r) => (first = () => r(performance.now())));
        const t0 = performance.now();
        const done = ctx.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "hi" }] });
        const t1 = await got;
        await done;
        if (i >= WARMUP) out.push(t1 - t0);
      }
    });
  } finally {
    proc.kill();
    await proc.exited;
  }
  return out;
}

async function benchHttp(): Promise<{ first: number[]; delta: number[] }> {
  const proc = Bun.spawn([OUTFILE, "serve", "--port", "0", "--data-dir", dir, "--config", join(dir, "airlock.yaml")], { cwd: ws, stdin: "ignore", stdout: "ignore", stderr: "pipe", env });
  let err = "";
  const reader = proc.stderr.pipeThrough(new TextDecoderStream()).getReader();
  let url: string | undefined;
  while (!url) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`serve ended: ${err}`);
    err += value;
    url = /listening on (http:\/\/\S+)/.exec(err)?.[1];
  }
  void (async () => {
    for (;;) if ((await reader.read()).done) break;
  })();
  const token = readFileSync(join(dir, "api-token"), "utf8").trim();
  const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" };
  const first: number[] = [];
  const delta: number[] = [];
  try {
    for (let i = 0; i < WARMUP + SAMPLES; i++) {
      const s = (await (await fetch(`${url}/sessions`, { method: "POST", headers, body: JSON.stringify({ workspace: ws }) })).json()) as { id: string };
      const t0 = performance.now();
      const res = await fetch(`${url}/sessions/${s.id}/reply`, { method: "POST", headers, body: JSON.stringify({ message: "hi" }) });
      let tFirst: number | undefined;
      let tDelta: number | undefined;
      let buf = "";
      for await (const chunk of res.body!.pipeThrough(new TextDecoderStream())) {
        buf += chunk;
        if (tFirst === undefined && /\nevent: \w+|^event: \w+/.test(buf)) tFirst = performance.now();
        if (tDelta === undefined && /event: delta/.test(buf)) tDelta = performance.now();
      }
      if (i >= WARMUP) {
        first.push(tFirst! - t0);
        delta.push(tDelta! - t0);
      }
    }
  } finally {
    proc.kill();
    await proc.exited;
  }
  return { first, delta };
}

try {
  const acpTimes = await benchAcp();
  const http = await benchHttp();
  console.log(
    JSON.stringify(
      {
        acp_prompt_to_first_update: stats(acpTimes),
        http_reply_to_first_sse_event: stats(http.first),
        http_reply_to_first_delta: stats(http.delta),
      },
      null,
      2,
    ),
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
