/**
 * @module test/e2e/early-request-attacks.test
 * Attacks on `airlock run`'s early request (src/cli/early-request.ts, SPEC §2 "The early request") that once broke
 * it, against a real local chat-completions server: a config the runtime refuses must never be cached (each later
 * run would send a request the run then fails), and a config file that changes and changes back while a run starts
 * must not leave the other text's config cached under the first text's key; and a process that can replace the data
 * dir (a tool under `danger-full-access` can rename it: only its secret files are masked) must not be able to aim the
 * early request of a run whose `--config` lies elsewhere (a file it cannot write) at its own server.
 */
import { describe, expect, test } from "bun:test";
import { chownSync, existsSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { removeAfterAllTests } from "../cleanup.ts";
import { startFakeOpenAI, textChunks } from "../fixtures/fake-openai.ts";
import { REPO } from "../harness-binary.ts";
import { resolveContext } from "../../src/cli/context.ts";
import { configCacheKey, readConfigCache, startEarlyRequest, writeConfigCache } from "../../src/cli/early-request.ts";
import { Config } from "../../src/config/schema.ts";
import { withdrawEarlyRequest } from "../../src/agent/providers/early.ts";

const SOURCE = [process.execPath, join(REPO, "src", "main.ts")];

const provider = (url: string, more = "") => `provider:\n  name: openai\n  model: m\n  base_url: ${url}\n  api_key_env: BENCH_KEY\n${more}`;

/** A temp home with a data dir (approver token, `config`) and a workspace. */
function home(config: string): { dir: string; data: string; ws: string } {
  const dir = mkdtempSync(join(tmpdir(), "airlock-early-atk-"));
  removeAfterAllTests(dir);
  const data = join(dir, "data");
  const ws = join(dir, "ws");
  mkdirSync(data);
  mkdirSync(ws);
  writeFileSync(join(data, "airlock.yaml"), config);
  writeFileSync(join(data, "approver-token"), "a".repeat(64), { mode: 0o600 });
  writeFileSync(join(data, "api-token"), "b".repeat(64), { mode: 0o600 });
  return { dir, data, ws };
}

/** `airlock run hi --headless` from source in `h` (plus `extra` options), stdio piped; `env` over PATH. */
function spawnRun(h: { data: string; ws: string }, env: Record<string, string>, extra: string[] = []) {
  return Bun.spawn([...SOURCE, "run", "hi", "--headless", ...extra, "--data-dir", h.data, "--workspace", h.ws], {
    cwd: h.ws,
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
    env: { PATH: "/usr/bin:/bin", ...env },
  });
}

/**
 * Waits for a run spawned by {@link spawnRun} to end, killing it (SIGKILL) after 30 s: a hang (a FIFO opened
 * without O_NONBLOCK waits for a writer for ever) fails the test then instead of at the suite's timeout.
 * Resolves to whether it was killed, its exit code, stdout and stderr.
 */
async function endOrKill(p: ReturnType<typeof spawnRun>): Promise<{ killed: boolean; code: number; stdout: string; stderr: string }> {
  let killed = false;
  const guard = setTimeout(() => {
    killed = true;
    p.kill("SIGKILL");
  }, 30_000);
  const [code, stdout, stderr] = await Promise.all([p.exited, new Response(p.stdout).text(), new Response(p.stderr).text()]);
  clearTimeout(guard);
  return { killed, code, stdout, stderr };
}

describe("the early request, attacked", () => {
  test("a config the schema accepts but the runtime refuses (an unknown tool name) is never cached: no run sends anything", async () => {
    const fake = startFakeOpenAI(() => textChunks("ok"));
    try {
      const h = home(provider(fake.url, "tools:\n  developer__shel:\n    permission: deny\n"));
      for (let i = 0; i < 2; i++) {
        const p = spawnRun(h, { HOME: h.dir, BENCH_KEY: "k" });
        const [code, stderr] = await Promise.all([p.exited, new Response(p.stderr).text()]);
        expect([i, code, stderr]).toEqual([i, 2, expect.stringContaining("config_invalid: tools.developer__shel")]);
        // nothing reached the server, not even a request aborted at once
        expect([i, fake.started()]).toEqual([i, 0]);
      }
      expect(existsSync(join(h.data, "config-cache.json"))).toBe(false);
    } finally {
      await fake.close();
    }
  }, 120_000);

  test("a config file changed and changed back while a run starts: the other text's config is not cached under the first text's key", async () => {
    const h = home(provider("http://127.0.0.1:9/v1"));
    const env = { HOME: h.dir, BENCH_KEY: "k" };
    const opts = { dataDir: h.data };
    const original = provider("http://127.0.0.1:9/v1");
    try {
      // the run keys the cache on the original text (a miss: nothing sent) …
      const start = await startEarlyRequest("hi", opts, env);
      expect(start?.sent).toBe(false);
      // … the file is rewritten in place (a truncating save, another server) while the config is loaded …
      writeFileSync(join(h.data, "airlock.yaml"), provider("https://elsewhere.example/v1"));
      const ctx = await resolveContext(opts, env);
      expect(ctx.config.provider.base_url).toBe("https://elsewhere.example/v1");
      // … and back to the original text before the cache is written
      writeFileSync(join(h.data, "airlock.yaml"), original);
      start!.configLoaded(ctx.config, ctx.configText);
      const slot = configCacheKey(opts, env)!;
      const cached = readConfigCache(slot);
      // a miss, or the original text's own config: never the other server under the original text's key
      expect(cached?.provider.base_url ?? "http://127.0.0.1:9/v1").toBe("http://127.0.0.1:9/v1");
    } finally {
      withdrawEarlyRequest();
    }
  });

  test("a data dir replaced by a same-user process cannot redirect a run whose --config file lies elsewhere", async () => {
    const good = startFakeOpenAI(() => textChunks("ok"));
    const evil = startFakeOpenAI(() => textChunks("stolen"));
    try {
      const h = home("");
      const trusted = join(h.dir, "etc-airlock.yaml");
      writeFileSync(trusted, provider(good.url));
      const env = { HOME: h.dir, BENCH_KEY: "k" };
      const opts = { dataDir: h.data, config: trusted };
      // the attacker's data dir: its own approver token, so its own HMAC key, and an entry for the trusted file's bytes
      writeFileSync(join(h.data, "approver-token"), "e".repeat(64), { mode: 0o600 });
      const slot = configCacheKey(opts, env)!;
      writeConfigCache(slot, opts, env, Config.parse({ provider: { name: "openai", model: "m", base_url: evil.url, api_key_env: "BENCH_KEY" } }), slot.text);
      expect(readConfigCache(slot)?.provider.base_url).toBe(evil.url);
      const p = spawnRun(h, env, ["--config", trusted]);
      const [code, stdout] = await Promise.all([p.exited, new Response(p.stdout).text()]);
      expect({ code, stdout }).toEqual({ code: 0, stdout: "ok\n" });
      // the key never left for the attacker's server, not even in a request aborted at once
      expect({ evil: evil.started(), good: good.started() }).toEqual({ evil: 0, good: 1 });
    } finally {
      await Promise.all([good.close(), evil.close()]);
    }
  }, 120_000);

  test("an API key with trailing whitespace (a key file's newline) is not sent early: one request per turn, not two", async () => {
    const fake = startFakeOpenAI(() => textChunks("ok"));
    try {
      const h = home(provider(fake.url));
      for (let i = 0; i < 2; i++) {
        const p = spawnRun(h, { HOME: h.dir, BENCH_KEY: "k\n" });
        const [code, stdout, stderr] = await Promise.all([p.exited, new Response(p.stdout).text(), new Response(p.stderr).text()]);
        expect({ i, code, stdout, stderr }).toEqual({ i, code: 0, stdout: "ok\n", stderr: "" });
        expect([i, fake.started()]).toEqual([i, i + 1]);
      }
      expect(existsSync(join(h.data, "config-cache.json"))).toBe(true);
    } finally {
      await fake.close();
    }
  }, 120_000);

  test("a config file changed after the early request left (TOCTOU): the run keeps the config it was sent with, one server, one request", async () => {
    const a = startFakeOpenAI(() => textChunks("ok"));
    const b = startFakeOpenAI(() => textChunks("ok"));
    const saved = { ...process.env };
    try {
      const h = home(provider(a.url));
      const { run } = await import("../../src/cli/run.ts");
      for (const k of ["AIRLOCK_HOME", "XDG_DATA_HOME", "AIRLOCK_EARLY_REQUEST", "AIRLOCK_DATABASE_URL"]) delete process.env[k];
      process.env.HOME = h.dir;
      process.env.BENCH_KEY = "k";
      const opts = { param: {}, headless: true, outputFormat: "text" as const, dataDir: h.data, workspace: h.ws };
      expect(await run("hi", opts)).toBe(0); // cold: the cache is written
      const early = await startEarlyRequest("hi", opts);
      expect(early?.sent).toBe(true);
      // the file now names another server, after the first request left for the first one
      writeFileSync(join(h.data, "airlock.yaml"), provider(b.url));
      expect(await run("hi", opts, early)).toBe(0);
      while (a.started() > a.requests.length) await Bun.sleep(10);
      // the cold run's request and the early one, adopted; nothing went to the other server
      expect({ a: a.started(), b: b.started() }).toEqual({ a: 2, b: 0 });
    } finally {
      for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k];
      Object.assign(process.env, saved);
      withdrawEarlyRequest();
      await Promise.all([a.close(), b.close()]);
    }
  }, 120_000);

  test("a FIFO at config-cache.json (a process that can write the data dir, another user of a shared one) does not hang the run: a miss, the run completes, its cache write replaces it", async () => {
    const fake = startFakeOpenAI(() => textChunks("ok"));
    try {
      const h = home(provider(fake.url));
      expect(Bun.spawnSync(["mkfifo", join(h.data, "config-cache.json")]).exitCode).toBe(0);
      // as root: planted by another user (nobody), as in a data dir two users share
      if (process.getuid?.() === 0) chownSync(join(h.data, "config-cache.json"), 65534, 65534);
      const outcomes: unknown[] = [];
      for (let i = 0; i < 2; i++) {
        // a hang (the cache opened without O_NONBLOCK waits for a writer forever) fails this test in 30 s
        const { killed, code, stdout } = await endOrKill(spawnRun(h, { HOME: h.dir, BENCH_KEY: "k" }));
        outcomes.push({ i, killed, code, stdout });
      }
      expect(outcomes).toEqual([0, 1].map((i) => ({ i, killed: false, code: 0, stdout: "ok\n" })));
      // the first run missed (the SDK's request) and wrote a regular cache over the FIFO; the second sent early
      expect(fake.headers.map((hd) => hd.has("x-stainless-retry-count"))).toEqual([true, false]);
      expect(statSync(join(h.data, "config-cache.json")).isFile()).toBe(true);
    } finally {
      await fake.close();
    }
  }, 120_000);

  test("an approver token that is a FIFO does not hang the run: the normal path refuses it (config_invalid), nothing is sent", async () => {
    const fake = startFakeOpenAI(() => textChunks("ok"));
    try {
      const h = home(provider(fake.url));
      rmSync(join(h.data, "approver-token"));
      expect(Bun.spawnSync(["mkfifo", join(h.data, "approver-token")]).exitCode).toBe(0);
      const { killed, code, stderr } = await endOrKill(spawnRun(h, { HOME: h.dir, BENCH_KEY: "k" }));
      expect({ killed, code, stderr }).toEqual({ killed: false, code: 2, stderr: expect.stringContaining("is not a regular file") });
      expect(fake.started()).toBe(0);
    } finally {
      await fake.close();
    }
  }, 120_000);
});
