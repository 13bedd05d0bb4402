/**
 * @module test/integration/attach-helpers
 * What the `airlock attach` tests share: a data dir whose scripted model spawns a subagent that asks to
 * write a file (a card from `[root›subagent#0]`), an authenticated fetch against the real `airlock serve`,
 * and `airlock attach --plain` as a real process through pipes, waited on by what it prints.
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { waitFor } from "../processes.ts";

/** The scripted model: the root spawns one subagent, which asks to write `out.txt` (smart mode asks), then both answer. */
export const SUBAGENT_CARD_SCRIPT = [
  "turns:",
  '  - tool_calls: [{ name: subagent__spawn, arguments: { instructions: "write it" } }]',
  '  - text: "root done"',
  "subagents:",
  "  - turns:",
  '      - tool_calls: [{ name: developer__write_file, arguments: { path: "out.txt", content: "w" } }]',
  '      - text: "child done"',
  "",
].join("\n");

/** A model that writes a.txt, then b.txt (each a write_file call in a turn of its own), then says "end". */
export const TWO_WRITES_SCRIPT = [
  "turns:",
  '  - tool_calls: [{ name: developer__write_file, arguments: { path: "a.txt", content: "a" } }]',
  '  - tool_calls: [{ name: developer__write_file, arguments: { path: "b.txt", content: "b" } }]',
  '  - text: "end"',
  "",
].join("\n");

/** Writes `airlock.yaml` (smart mode, the scripted provider reading `turns.yaml`) and `turns.yaml` into `dir`. */
export function writeScriptedConfig(dir: string, script: string): void {
  writeFileSync(join(dir, "airlock.yaml"), "mode: smart\nprovider: { name: scripted, script: turns.yaml }\n");
  writeFileSync(join(dir, "turns.yaml"), script);
}

/** An API client of one server: `call(method, path, body?)` → status and JSON. */
export function apiOf(url: string, dataDir: string): (method: string, path: string, body?: unknown) => Promise<{ status: number; body: any }> {
  const token = readFileSync(join(dataDir, "api-token"), "utf8").trim();
  return async (method, path, body) => {
    const res = await fetch(url + path, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    let parsed: any = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      // an SSE body
    }
    return { status: res.status, body: parsed };
  };
}

/** A new root session with its own workspace folder `dir/<name>`. */
export async function newRoot(url: string, dataDir: string, name: string): Promise<{ id: string; workspace: string }> {
  const workspace = join(dataDir, name);
  mkdirSync(workspace, { recursive: true });
  const r = await apiOf(url, dataDir)("POST", "/sessions", { workspace });
  if (r.status !== 201) throw new Error(`POST /sessions: ${r.status} ${JSON.stringify(r.body)}`);
  return { id: r.body.id, workspace };
}

/** Starts a turn of `sessionId` without waiting for it (the reply stream is read to its end in the background). */
export function startTurn(url: string, dataDir: string, sessionId: string, message: string): void {
  void apiOf(url, dataDir)("POST", `/sessions/${sessionId}/reply`, { message }).catch(() => {});
}

/** Polls `fn` (every 100 ms) until it returns a value other than undefined; throws naming `what` after `limitMs`. */
export async function until<T>(fn: () => Promise<T | undefined>, what: string, limitMs = 60_000): Promise<T> {
  const deadline = Date.now() + limitMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(100);
  }
}

/** `airlock attach` running as a process, its stdout collected. */
export interface AttachProcess {
  proc: Bun.Subprocess<"pipe", "pipe", "pipe">;
  /** Everything printed on stdout so far. */
  out(): string;
  /** Everything printed on stderr so far. */
  err(): string;
  /** Resolves once stdout (from `from`, a character offset) matches; returns the match. Throws after `limitMs` with what was printed. */
  waitOut(re: RegExp, limitMs?: number, from?: number): Promise<RegExpExecArray>;
  /** Writes one line to attach's stdin. */
  send(line: string): Promise<void>;
}

/** Spawns `bun src/main.ts attach …args` with piped stdio (so it runs as --plain whatever is passed). */
export function spawnAttach(main: string, args: string[], env: Record<string, string | undefined> = process.env): AttachProcess {
  const proc = Bun.spawn([process.execPath, main, "attach", ...args], { stdin: "pipe", stdout: "pipe", stderr: "pipe", env });
  let out = "";
  let err = "";
  void (async () => {
    for await (const chunk of proc.stdout.pipeThrough(new TextDecoderStream())) out += chunk;
  })();
  void (async () => {
    for await (const chunk of proc.stderr.pipeThrough(new TextDecoderStream())) err += chunk;
  })();
  return {
    proc,
    out: () => out,
    err: () => err,
    async waitOut(re, limitMs = 60_000, from = 0) {
      let m: RegExpExecArray | null = null;
      try {
        await waitFor(() => (m = re.exec(out.slice(from))) !== null, `attach to print ${re}`, limitMs);
      } catch (e) {
        throw new Error(`${(e as Error).message}\n--- stdout ---\n${out}\n--- stderr ---\n${err}`);
      }
      return m!;
    },
    async send(line) {
      proc.stdin.write(`${line}\n`);
      await proc.stdin.flush();
    },
  };
}
