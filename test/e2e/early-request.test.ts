/**
 * @module test/e2e/early-request.test
 * `airlock run`'s early request (src/cli/early-request.ts, SPEC §2 "The early request") against a real local
 * server speaking the chat-completions wire format: with a warm validated-config cache the first request
 * leaves before the runtime and is adopted by the `openai` adapter; the body, the URL and the compared headers
 * are those the SDK sends itself (the first, cold run goes through the SDK: the two runs' requests are compared
 * byte for byte), exactly one request reaches the server per turn, and every input that may change or block
 * the first request keeps the early request from being sent. Which path sent a request is told by the SDK's
 * own `x-stainless-retry-count` header, which the early request does not send.
 */
import { describe, expect, test } from "bun:test";
import { appendFileSync, chmodSync, chownSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { removeAfterAllTests } from "../cleanup.ts";
import { startFakeOpenAI, textChunks, type FakeOpenAI, type FakeReply } from "../fixtures/fake-openai.ts";
import { compiledBinary, REPO } from "../harness-binary.ts";

const SOURCE = [process.execPath, join(REPO, "src", "main.ts")];

interface Place {
  dir: string;
  data: string;
  ws: string;
  fake: FakeOpenAI;
}

/** A temp home with a data dir holding `config(url)`, a workspace, and a fake server answering with `reply`. */
function place(config: (url: string) => string, reply: (body: any, n: number) => FakeReply = () => textChunks("ok")): Place {
  const fake = startFakeOpenAI(reply);
  const dir = mkdtempSync(join(tmpdir(), "airlock-early-"));
  removeAfterAllTests(dir);
  const data = join(dir, "data");
  const ws = join(dir, "ws");
  mkdirSync(data);
  mkdirSync(ws);
  writeFileSync(join(data, "airlock.yaml"), config(fake.url));
  // the tokens a first run creates (a run that starts without them keys the cache only once its runtime made them: "a new data dir" below)
  writeFileSync(join(data, "approver-token"), "a".repeat(64), { mode: 0o600 });
  writeFileSync(join(data, "api-token"), "b".repeat(64), { mode: 0o600 });
  return { dir, data, ws, fake };
}

/** Runs `airlock run hi` to its end. */
async function run(cli: string[], p: Place, env: Record<string, string> = {}, extra: string[] = [], prompt = "hi"): Promise<{ code: number; stdout: string; stderr: string }> {
  const proc = Bun.spawn([...cli, "run", prompt, "--headless", "--data-dir", p.data, "--workspace", p.ws, ...extra], {
    cwd: p.ws,
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
    env: { PATH: "/usr/bin:/bin", HOME: p.dir, BENCH_KEY: "k", ...env },
  });
  const [code, stdout, stderr] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  return { code, stdout, stderr };
}

/** Whether request `i` was the SDK's own (it sends `x-stainless-retry-count`; the early request does not). */
function fromSdk(p: Place, i: number): boolean {
  return p.fake.headers[i]!.has("x-stainless-retry-count");
}

const ok = { code: 0, stdout: "ok\n" };

/** A cold run then a warm one: the first through the SDK, the second sent early; equal requests. */
async function coldThenWarm(cli: string[], config: (url: string) => string, prompt = "hi"): Promise<void> {
  const p = place(config);
  try {
    const cold = await run(cli, p, {}, [], prompt);
    expect({ code: cold.code, stdout: cold.stdout }).toEqual(ok);
    expect(p.fake.requests.length).toBe(1);
    expect(fromSdk(p, 0)).toBe(true);
    const warm = await run(cli, p, {}, [], prompt);
    // the same output (config warnings included), and no word of a request not adopted
    expect({ code: warm.code, stdout: warm.stdout, stderr: warm.stderr }).toEqual({ ...ok, stderr: cold.stderr });
    expect(warm.stderr).not.toContain("early request");
    // exactly one request per turn, the second one sent early and adopted
    expect(p.fake.requests.length).toBe(2);
    expect(fromSdk(p, 1)).toBe(false);
    // the same bytes and the same compared headers as the SDK's own request
    expect(p.fake.raw[1]).toBe(p.fake.raw[0]!);
    for (const h of ["authorization", "content-type", "accept", "host"]) expect([h, p.fake.headers[1]!.get(h)]).toEqual([h, p.fake.headers[0]!.get(h)]);
    // nothing lost: both sessions are stored alike (the session, its turn, the user's message and the answer)
    const show = (args: string[]) => Bun.spawnSync([...cli, "sessions", ...args, "--data-dir", p.data], { env: { PATH: "/usr/bin:/bin", HOME: p.dir } }).stdout.toString();
    const ids = [...show(["list"]).matchAll(/^(ses_\w+)/gm)].map((m) => m[1]!);
    expect(ids.length).toBe(2);
    const [a, b] = ids.map((id) => show(["show", id]).replace(/\b(ses|turn)_\w+/g, "$1_ID"));
    expect(a).toBe(b!);
    if (prompt === "hi") expect(a).toContain("[user] hi\n[assistant] ok");
  } finally {
    await p.fake.close();
  }
}

const provider = (url: string, more = "") => `provider:\n  name: openai\n  model: m\n  base_url: ${url}\n  api_key_env: BENCH_KEY\n${more}`;

describe("the early request", () => {
  test("has the SDK's body, URL and headers, and is adopted: one request per turn, for a matrix of configs (source CLI)", async () => {
    const configs: ((url: string) => string)[] = [
      (u) => provider(u),
      (u) => `${provider(u)}tools:\n  offer: direct\nmode: approve\nsandbox: read-only\n`,
      (u) => `${provider(`${u}/`)}tools:\n  offer: both\nmode: autonomous\nsandbox: danger-full-access\n`,
      (u) => `${provider(u, "  timeout_s: 30\n  max_retries: 1\n  context_tokens: 100000\n  replay_reasoning_content: true\n  prompt_caching: false\n  thinking_budget_tokens: 2048\n")}mode: chat\nsandbox: workspace-write\nprivacy: private\n`,
      (u) => `${provider(u)}tools:\n  offer: code\n  developer__shell:\n    permission: deny\npermissions:\n  allow: ["Bash(ls:*)"]\n`,
    ];
    await Promise.all([...configs.map((c) => coldThenWarm(SOURCE, c)), coldThenWarm(SOURCE, (u) => provider(u), 'héllo ✓ 🎉 "quoted" \\ back\nslash\ttab </script> \u2028')]);
  }, 300_000);

  test("a new data dir (no approver token yet): the first run writes the cache under the token its runtime created, the second sends early", async () => {
    const p = place((u) => provider(u));
    try {
      rmSync(join(p.data, "approver-token"));
      rmSync(join(p.data, "api-token"));
      const first = await run(SOURCE, p);
      expect({ code: first.code, stdout: first.stdout }).toEqual(ok);
      expect(readdirSync(p.data)).toContain("approver-token");
      expect(readdirSync(p.data)).toContain("config-cache.json");
      const second = await run(SOURCE, p);
      expect({ code: second.code, stdout: second.stdout, stderr: second.stderr }).toEqual({ ...ok, stderr: first.stderr });
      // one request per turn; the second run's was sent early and adopted, the same bytes as the first's
      expect(p.fake.requests.length).toBe(2);
      expect([fromSdk(p, 0), fromSdk(p, 1)]).toEqual([true, false]);
      expect(p.fake.raw[1]).toBe(p.fake.raw[0]!);
    } finally {
      await p.fake.close();
    }
  }, 120_000);

  test("the compiled binary's cache and early request are the same as the source CLI's", async () => {
    const bin = await compiledBinary();
    await Promise.all([coldThenWarm([bin], (u) => provider(u)), coldThenWarm([bin], (u) => `${provider(u)}tools:\n  offer: both\n`)]);
  }, 300_000);

  test("is not sent with hooks (config or Claude Code settings), MCP servers, a recipe, the switch off, or a changed config", async () => {
    const hook = "    - hooks:\n        - type: command\n          command: /bin/true\n";
    const cases: { name: string; config: (u: string) => string; env?: Record<string, string>; prepare?: (p: Place) => void; extra?: string[] }[] = [
      { name: "a config hook", config: (u) => `${provider(u)}hooks:\n  SubagentStop:\n${hook}` },
      {
        name: "Claude Code settings hooks",
        config: (u) => `${provider(u)}hooks:\n  import_claude_settings: true\n`,
        prepare: (p) => {
          mkdirSync(join(p.dir, ".claude"));
          writeFileSync(join(p.dir, ".claude", "settings.json"), JSON.stringify({ hooks: { SubagentStop: [{ hooks: [{ type: "command", command: "/bin/true" }] }] } }));
        },
      },
      { name: "an MCP server", config: (u) => `${provider(u)}mcp_servers:\n  fs:\n    command: /bin/true\n` },
      { name: "the switch off", config: (u) => provider(u), env: { AIRLOCK_EARLY_REQUEST: "0" } },
      { name: "a flag override", config: (u) => provider(u), extra: ["--mode", "chat"] },
      {
        name: "a recipe",
        config: (u) => provider(u),
        prepare: (p) => writeFileSync(join(p.dir, "r.yaml"), "name: r\ninstructions: hi\n"),
        extra: [],
      },
    ];
    await Promise.all(
      cases.map(async (c) => {
        const p = place(c.config);
        try {
          c.prepare?.(p);
          const extra = c.name === "a recipe" ? ["--recipe", join(p.dir, "r.yaml")] : (c.extra ?? []);
          for (let i = 0; i < 2; i++) {
            const r = await run(SOURCE, p, c.env ?? {}, extra);
            expect([c.name, r.code, r.stdout]).toEqual([c.name, 0, "ok\n"]);
            expect([c.name, p.fake.requests.length, fromSdk(p, i)]).toEqual([c.name, i + 1, true]);
          }
        } finally {
          await p.fake.close();
        }
      }),
    );
  }, 300_000);

  test("a changed config text, env variable, or a tampered, symlinked or foreign-owned cache is a miss: nothing sent early", async () => {
    const p = place((u) => provider(u));
    try {
      let n = 0;
      const expectRun = async (early: boolean, env: Record<string, string> = {}) => {
        const r = await run(SOURCE, p, env);
        expect({ code: r.code, stdout: r.stdout, stderr: r.stderr }).toEqual({ ...ok, stderr: "" });
        expect(p.fake.requests.length).toBe(++n);
        expect([n, fromSdk(p, n - 1)]).toEqual([n, !early]);
      };
      await expectRun(false); // cold
      await expectRun(true); // warm
      appendFileSync(join(p.data, "airlock.yaml"), "# edited\n");
      await expectRun(false); // the text changed: a miss, written again
      await expectRun(true);
      await expectRun(false, { XDG_DATA_HOME: "/nonexistent" }); // an input variable changed (--data-dir still wins)
      await expectRun(false); // and back: written again for this environment
      await expectRun(true);
      const cache = join(p.data, "config-cache.json");
      chmodSync(cache, 0o660);
      await expectRun(false);
      await expectRun(true);
      renameSync(cache, `${cache}.real`);
      symlinkSync(`${cache}.real`, cache);
      await expectRun(false);
      if (process.getuid?.() === 0) {
        await expectRun(true); // replaced by a fresh file (rename over the link)
        chownSync(cache, 65534, 65534);
        await expectRun(false);
      }
      // a cache whose config names another model (same key): the early request is not adopted (below)
      expect(JSON.parse(readFileSync(cache, "utf8")).config.provider.model).toBe("m");
    } finally {
      await p.fake.close();
    }
  }, 300_000);

  test("a request that differs is not adopted: the early one is aborted, a warning names the field, the run completes with the SDK's", async () => {
    // the early request (model "other") hangs; the SDK's own (model "m") is answered
    // (timeout_s: an early request adopted by mistake would hang the run only 5 s, then fail this test)
    const p = place((u) => provider(u, "  timeout_s: 5\n"), (body) => (body.model === "other" ? { sse: [{ hang: true }] } : textChunks("ok")));
    try {
      expect((await run(SOURCE, p)).code).toBe(0);
      const cache = join(p.data, "config-cache.json");
      const saved = JSON.parse(readFileSync(cache, "utf8"));
      saved.config.provider.model = "other";
      writeFileSync(cache, JSON.stringify(saved));
      const r = await run(SOURCE, p);
      expect({ code: r.code, stdout: r.stdout }).toEqual(ok);
      expect(r.stderr).toContain("airlock: WARNING: provider: the early request was not adopted: its body differed");
      const models = p.fake.requests.map((b) => b.model);
      // the cold run's, then at most the early one (aborted, maybe before it arrived), then the SDK's own
      expect(models.filter((m) => m === "m").length).toBe(2);
      expect(models.filter((m) => m === "other").length).toBeLessThanOrEqual(1);
      expect(p.fake.disconnects()).toBe(models.filter((m) => m === "other").length);
      expect(fromSdk(p, p.fake.requests.length - 1)).toBe(true);
      // and the audit log names the field
      const audit = Bun.spawnSync([...SOURCE, "audit", "--export", "jsonl", "--data-dir", p.data], { env: { PATH: "/usr/bin:/bin", HOME: p.dir } });
      const rows = audit.stdout.toString().trim().split("\n").filter(Boolean).map((l) => JSON.parse(l));
      expect(rows.filter((r) => r.kind === "early_request_not_adopted").map((r) => r.detail)).toEqual([{ field: "body" }]);
    } finally {
      await p.fake.close();
    }
  }, 120_000);

  test("an adopted early request answered 500 is retried through the SDK, as its own request would be", async () => {
    const p = place((u) => provider(u), (_b, n) => (n === 1 ? { status: 500, body: { error: { message: "boom", type: "server_error" } } } : textChunks("ok")));
    try {
      expect((await run(SOURCE, p)).code).toBe(0);
      const r = await run(SOURCE, p);
      expect({ code: r.code, stdout: r.stdout }).toEqual(ok);
      expect(r.stderr).not.toContain("early request");
      expect(p.fake.requests.length).toBe(3);
      expect([fromSdk(p, 1), fromSdk(p, 2)]).toEqual([false, true]);
      expect(p.fake.headers[2]!.get("x-stainless-retry-count")).toBe("0");
      expect(p.fake.raw[2]).toBe(p.fake.raw[1]!);
    } finally {
      await p.fake.close();
    }
  }, 120_000);

  test("an adopted early request that stalls ends at the idle timeout (the SDK's abort reaches it), as the SDK's own would", async () => {
    // the cold run's request is answered; the early one sends its headers, then nothing, until its client goes away
    const p = place((u) => provider(u, "  timeout_s: 1\n  max_retries: 0\n"), (_b, n) => (n === 0 ? textChunks("ok") : { sse: [{ hang: true }] }));
    try {
      expect((await run(SOURCE, p)).code).toBe(0);
      const r = await run(SOURCE, p, {}, ["--output-format", "json"]);
      expect(fromSdk(p, 1)).toBe(false);
      expect({ code: r.code, status: JSON.parse(r.stdout).status }).toEqual({ code: 1, status: "failed" });
      expect(JSON.parse(r.stdout).error.message).toContain("1");
      while (p.fake.disconnects() < 1) await Bun.sleep(10);
      expect({ started: p.fake.started(), complete: p.fake.requests.length }).toEqual({ started: 2, complete: 2 });
    } finally {
      await p.fake.close();
    }
  }, 120_000);

  test("a run that fails before its first model request aborts the early request: the connection closes, nothing else is sent", async () => {
    // the cold run's request is answered; every later one hangs until its client goes away
    const p = place((u) => provider(u), (_b, n) => (n === 0 ? textChunks("ok") : { sse: [{ hang: true }] }));
    try {
      expect((await run(SOURCE, p)).code).toBe(0);
      // now the store cannot open: the run fails after the early request left, before its first model request
      for (const f of readdirSync(p.data).filter((f) => f.startsWith("airlock.db"))) renameSync(join(p.data, f), join(p.data, `${f}.moved`));
      mkdirSync(join(p.data, "airlock.db"));
      const { run: runCommand } = await import("../../src/cli/run.ts");
      const { earlyRequestPending } = await import("../../src/agent/providers/early.ts");
      // in this process, with the environment the cold run had (the cache key's inputs)
      const saved = { ...process.env };
      for (const k of ["AIRLOCK_HOME", "XDG_DATA_HOME", "AIRLOCK_EARLY_REQUEST", "AIRLOCK_DATABASE_URL"]) delete process.env[k];
      process.env.HOME = p.dir;
      process.env.BENCH_KEY = "k";
      try {
        await expect(runCommand("hi", { param: {}, headless: true, outputFormat: "text", dataDir: p.data, workspace: p.ws })).rejects.toThrow();
      } finally {
        for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k];
        Object.assign(process.env, saved);
      }
      expect(earlyRequestPending()).toBe(false);
      // every request that arrived is closed (the early one may have been aborted before the server had it all)
      while (p.fake.disconnects() < p.fake.requests.length - 1) await Bun.sleep(10);
      expect(p.fake.requests.length).toBeLessThanOrEqual(2);
      if (p.fake.requests.length === 2) expect(fromSdk(p, 1)).toBe(false);
    } finally {
      await p.fake.close();
    }
  }, 120_000);
});

