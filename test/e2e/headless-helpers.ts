/**
 * @module test/e2e/headless-helpers
 * Helpers for the headless and schedule end-to-end tests: a temp data dir / workspace / HOME with an
 * `airlock.yaml` and scripted-provider turns, and a runner for the compiled binary that timestamps each
 * stdout line as it arrives (so tests can measure call → refusal latency from the NDJSON stream).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stringify } from "yaml";
import { build, OUTFILE } from "../../build/build.ts";

export const BINARY = OUTFILE;
export const HOOKS = join(import.meta.dir, "..", "fixtures", "hooks");

/** Builds `dist/airlock` unless it is fresh. */
export async function ensureBinary(): Promise<string> {
  await build();
  return BINARY;
}

export interface Sandbox {
  root: string;
  dataDir: string;
  workspace: string;
  home: string;
  /** Writes a file relative to the root (dirs created). Returns its absolute path. */
  write(rel: string, text: string): string;
  cleanup(): void;
}

/** A temp tree: `data/` (with `airlock.yaml` from `config` and `turns.yaml` from `turns`), `ws/`, `home/`. */
export function makeSandbox(opts: { config?: Record<string, unknown>; turns?: Record<string, unknown> } = {}): Sandbox {
  const root = mkdtempSync(join(tmpdir(), "airlock-e2e-"));
  const dataDir = join(root, "data");
  const workspace = join(root, "ws");
  const home = join(root, "home");
  for (const d of [dataDir, workspace, home]) mkdirSync(d, { recursive: true });
  const write = (rel: string, text: string) => {
    const p = join(root, rel);
    mkdirSync(join(p, ".."), { recursive: true });
    writeFileSync(p, text);
    return p;
  };
  const config = { provider: { name: "scripted", script: "turns.yaml" }, mode: "autonomous", sandbox: "workspace-write", ...(opts.config ?? {}) };
  write("data/airlock.yaml", stringify(config));
  if (opts.turns) write("data/turns.yaml", stringify(opts.turns));
  return { root, dataDir, workspace, home, write, cleanup: () => rmSync(root, { recursive: true, force: true }) };
}

export interface Line {
  text: string;
  /** performance.now() when the line arrived. */
  at: number;
}

export interface Proc {
  proc: ReturnType<typeof Bun.spawn>;
  /** stdout lines as they arrive. */
  lines: Line[];
  /** Resolves with the first line (parsed JSON) for which `pred` is true. */
  waitForLine(pred: (v: any) => boolean): Promise<any>;
  /** Waits for exit: code, all stdout text, all stderr text. */
  done: Promise<{ code: number; stdout: string; stderr: string; wallMs: number }>;
}

/** Spawns the binary with a clean environment (HOME = the sandbox's home). */
export function spawnAirlock(sb: Sandbox, args: string[], extraEnv: Record<string, string> = {}): Proc {
  const t0 = performance.now();
  const proc = Bun.spawn([BINARY, ...args], {
    cwd: sb.workspace,
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: sb.home, LANG: "C.UTF-8", ...extraEnv },
  });
  const lines: Line[] = [];
  const waiters: { pred: (v: any) => boolean; resolve: (v: any) => void }[] = [];
  let stdout = "";
  const readOut = (async () => {
    const dec = new TextDecoder();
    let buf = "";
    for await (const chunk of proc.stdout as ReadableStream<Uint8Array>) {
      const s = dec.decode(chunk, { stream: true });
      stdout += s;
      buf += s;
      let i: number;
      while ((i = buf.indexOf("\n")) >= 0) {
        const line: Line = { text: buf.slice(0, i), at: performance.now() };
        buf = buf.slice(i + 1);
        lines.push(line);
        let v: unknown;
        try {
          v = JSON.parse(line.text);
        } catch {
          continue;
        }
        for (const w of [...waiters]) {
          if (w.pred(v)) {
            waiters.splice(waiters.indexOf(w), 1);
            w.resolve(v);
          }
        }
      }
    }
  })();
  const stderrP = new Response(proc.stderr as ReadableStream<Uint8Array>).text();
  const done = (async () => {
    const code = await proc.exited;
    await readOut;
    return { code, stdout, stderr: await stderrP, wallMs: performance.now() - t0 };
  })();
  return {
    proc,
    lines,
    done,
    waitForLine(pred) {
      for (const l of lines) {
        try {
          const v = JSON.parse(l.text);
          if (pred(v)) return Promise.resolve(v);
        } catch {
          // not JSON
        }
      }
      return new Promise((resolve) => waiters.push({ pred, resolve }));
    },
  };
}

/** Parses stdout as NDJSON, failing with the offending line when one is not JSON. */
export function parseNdjson(stdout: string): any[] {
  expectEndsWithNewline(stdout);
  return stdout
    .slice(0, -1)
    .split("\n")
    .map((l, i) => {
      try {
        return JSON.parse(l);
      } catch {
        throw new Error(`stdout line ${i + 1} is not JSON: ${JSON.stringify(l.slice(0, 200))}`);
      }
    });
}

function expectEndsWithNewline(s: string): void {
  if (!s.endsWith("\n")) throw new Error(`stdout does not end with a newline: ${JSON.stringify(s.slice(-200))}`);
}

/**
 * Pairs `tool_request` and `tool_result` lines by call id and returns, per call, the time between the
 * arrival of the request line and of the result line, ms.
 */
export function requestToResultMs(lines: Line[]): Map<string, { tool: string; ms: number; result: any }> {
  const req = new Map<string, Line>();
  const out = new Map<string, { tool: string; ms: number; result: any }>();
  for (const l of lines) {
    let v: any;
    try {
      v = JSON.parse(l.text);
    } catch {
      continue;
    }
    if (v.type === "tool_request") req.set(v.call_id, l);
    if (v.type === "tool_result" && req.has(v.call_id)) out.set(v.call_id, { tool: v.tool, ms: l.at - req.get(v.call_id)!.at, result: v });
  }
  return out;
}
