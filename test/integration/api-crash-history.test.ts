/**
 * Valid history after a crash (issue 13 item 2): `airlock serve` is killed with SIGKILL while a tool call
 * is parked on a card; after a restart on the same data dir the session's next reply works against local
 * fake OpenAI and Anthropic servers that enforce the real APIs' tool-call pairing rules (HTTP 400 otherwise).
 * Also: a cancelled turn leaves a history both fakes accept.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { anthropicMessage, startFakeAnthropic } from "../fixtures/fake-anthropic.ts";
import { startFakeOpenAI, textChunks, toolCallChunks } from "../fixtures/fake-openai.ts";
import { openSse } from "../harness.ts";
import { spawnServe, type ServeProcess } from "../harness-serve.ts";

const MAIN = join(import.meta.dir, "../../src/main.ts");
const dirs: string[] = [];
const procs: Bun.Subprocess[] = [];
const closers: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const p of procs) {
    p.kill("SIGKILL");
    await p.exited;
  }
  for (const c of closers) await c();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

type Flavour = "openai" | "anthropic";

/** A fake of `flavour` whose first reply calls developer__write_file (a card in smart mode), every later one answers "recovered". */
function fakeProvider(flavour: Flavour): { url: string; requests: any[] } {
  if (flavour === "openai") {
    const f = startFakeOpenAI((_b, n) => (n === 0 ? toolCallChunks({ id: "call_w1", name: "developer__write_file", arguments: { path: "x.txt", content: "x" } }) : textChunks("recovered")));
    closers.push(f.close);
    return f;
  }
  const f = startFakeAnthropic((_b, n) =>
    n === 0 ? anthropicMessage([{ tool_use: { id: "toolu_w1", name: "developer__write_file", input: { path: "x.txt", content: "x" } } }]) : anthropicMessage([{ text: "recovered" }]),
  );
  closers.push(f.close);
  return f;
}

function setup(flavour: Flavour, url: string): string {
  const dir = mkdtempSync(join(tmpdir(), "airlock-crash-history-"));
  dirs.push(dir);
  mkdirSync(join(dir, "ws"));
  writeFileSync(join(dir, "airlock.yaml"), `mode: smart\nprovider: { name: ${flavour}, model: fake, base_url: "${url}", api_key_env: FAKE_KEY }\n`);
  return dir;
}

async function serve(dir: string): Promise<ServeProcess> {
  const sp = await spawnServe([process.execPath, MAIN, "serve", "--port", "0", "--data-dir", dir, "--config", join(dir, "airlock.yaml")], {
    env: { ...process.env, FAKE_KEY: "sk-fake" },
  });
  procs.push(sp.proc);
  return sp;
}

function auth(dir: string): Record<string, string> {
  return { authorization: `Bearer ${readFileSync(join(dir, "api-token"), "utf8").trim()}`, "content-type": "application/json" };
}

describe("history after kill -9 during a tool call", () => {
  for (const flavour of ["openai", "anthropic"] as const) {
    test(`the next reply after a restart is accepted by a ${flavour} server that enforces tool-call pairing`, async () => {
      const fake = fakeProvider(flavour);
      const dir = setup(flavour, fake.url);
      const first = await serve(dir);
      const h = auth(dir);
      const created = await fetch(`${first.url}/sessions`, { method: "POST", headers: h, body: JSON.stringify({ workspace: join(dir, "ws") }) });
      expect(created.status).toBe(201);
      const session = (await created.json()) as { id: string };
      const reply = await openSse(`${first.url}/sessions/${session.id}/reply`, { method: "POST", headers: h, body: JSON.stringify({ message: "write x" }) });
      await reply.waitFor((e) => e.event === "action_required", 60_000);
      first.proc.kill("SIGKILL");
      await first.proc.exited;
      await reply.ended;

      const second = await serve(dir);
      const got = (await (await fetch(`${second.url}/sessions/${session.id}`, { headers: h })).json()) as any;
      expect(got.turns.map((t: any) => t.status)).toEqual(["interrupted"]);
      const last = got.messages.at(-1);
      expect({ role: last.role, is_error: last.is_error, code: JSON.parse(last.content).error.code }).toEqual({ role: "tool", is_error: true, code: "interrupted" });
      const again = await openSse(`${second.url}/sessions/${session.id}/reply`, { method: "POST", headers: h, body: JSON.stringify({ message: "go on" }) });
      const fin = await again.waitFor((e) => e.event === "turn_finished", 60_000);
      expect(fin.data).toMatchObject({ status: "completed", answer: "recovered" });
      second.proc.kill("SIGTERM");
      expect(await second.proc.exited).toBe(0);
    }, 120_000);
  }
});

describe("history after a cancel during a tool call", () => {
  for (const flavour of ["openai", "anthropic"] as const) {
    test(`the next reply after a cancel is accepted by a ${flavour} server that enforces tool-call pairing`, async () => {
      const fake = fakeProvider(flavour);
      const dir = setup(flavour, fake.url);
      const sp = await serve(dir);
      const h = auth(dir);
      const session = (await (await fetch(`${sp.url}/sessions`, { method: "POST", headers: h, body: JSON.stringify({ workspace: join(dir, "ws") }) })).json()) as { id: string };
      const reply = await openSse(`${sp.url}/sessions/${session.id}/reply`, { method: "POST", headers: h, body: JSON.stringify({ message: "write x" }) });
      await reply.waitFor((e) => e.event === "action_required", 60_000);
      expect((await fetch(`${sp.url}/sessions/${session.id}/cancel`, { method: "POST", headers: h })).status).toBe(200);
      expect((await reply.waitFor((e) => e.event === "turn_finished", 60_000)).data.status).toBe("cancelled");
      const again = await openSse(`${sp.url}/sessions/${session.id}/reply`, { method: "POST", headers: h, body: JSON.stringify({ message: "go on" }) });
      expect((await again.waitFor((e) => e.event === "turn_finished", 60_000)).data).toMatchObject({ status: "completed", answer: "recovered" });
      sp.proc.kill("SIGTERM");
      expect(await sp.proc.exited).toBe(0);
    }, 120_000);
  }
});

describe("history after a turn hits a limit after a tool call", () => {
  for (const flavour of ["openai", "anthropic"] as const) {
    test(`the next reply after max_iterations is accepted by a ${flavour} server that enforces tool-call pairing`, async () => {
      const fake =
        flavour === "openai"
          ? startFakeOpenAI((_b, n) => (n === 0 ? toolCallChunks({ id: "call_r1", name: "developer__read_file", arguments: { path: "nothing.txt" } }) : textChunks("recovered")))
          : startFakeAnthropic((_b, n) =>
              n === 0 ? anthropicMessage([{ tool_use: { id: "toolu_r1", name: "developer__read_file", input: { path: "nothing.txt" } } }]) : anthropicMessage([{ text: "recovered" }]),
            );
      closers.push(fake.close);
      const dir = setup(flavour, fake.url);
      writeFileSync(join(dir, "airlock.yaml"), `${readFileSync(join(dir, "airlock.yaml"), "utf8")}limits: { max_iterations: 1 }\n`);
      const sp = await serve(dir);
      const h = auth(dir);
      const session = (await (await fetch(`${sp.url}/sessions`, { method: "POST", headers: h, body: JSON.stringify({ workspace: join(dir, "ws") }) })).json()) as { id: string };
      const reply = await openSse(`${sp.url}/sessions/${session.id}/reply`, { method: "POST", headers: h, body: JSON.stringify({ message: "read" }) });
      expect((await reply.waitFor((e) => e.event === "turn_finished", 60_000)).data).toMatchObject({ status: "failed", error: { code: "max_iterations" } });
      const again = await openSse(`${sp.url}/sessions/${session.id}/reply`, { method: "POST", headers: h, body: JSON.stringify({ message: "go on" }) });
      expect((await again.waitFor((e) => e.event === "turn_finished", 60_000)).data).toMatchObject({ status: "completed", answer: "recovered" });
      sp.proc.kill("SIGTERM");
      expect(await sp.proc.exited).toBe(0);
    }, 120_000);
  }
});
