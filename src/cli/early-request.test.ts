import { afterEach, describe, expect, test } from "bun:test";
import { chmodSync, chownSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI from "openai";
import { removeAfterAllTests } from "../../test/cleanup.ts";
import { startFakeOpenAI } from "../../test/fixtures/fake-openai.ts";
import { earlyRequestPending, withdrawEarlyRequest } from "../agent/providers/early.ts";
import { chatCompletionsUrl } from "../agent/providers/openai-request.ts";
import { pickDataDir } from "../config/paths.ts";
import { Config } from "../config/schema.ts";
import { resolveContext } from "./context.ts";
import { CONFIG_CACHE_FILE, CONFIG_ENV_INPUTS, configCacheKey, earlyRefusal, readConfigCache, startEarlyRequest, writeConfigCache } from "./early-request.ts";
import { earlySwitchedOff } from "./early-switch.ts";
import type { RunOptions } from "./run.ts";

/** A temp folder holding an approver token (the cache key's HMAC key), as a data dir after a first run does. */
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), "airlock-early-unit-"));
  removeAfterAllTests(d);
  writeFileSync(join(d, "approver-token"), "a".repeat(64), { mode: 0o600 });
  return d;
}

const BASE_OPTS: RunOptions = { param: {}, headless: true, outputFormat: "text" };

afterEach(() => {
  withdrawEarlyRequest();
});

describe("the validated-config cache's key", () => {
  test("names every environment variable config resolution reads (a new input fails this test)", async () => {
    const home = tempDir();
    for (const env of [{ HOME: home }, { HOME: home, XDG_DATA_HOME: join(home, "x") }, { HOME: home, AIRLOCK_HOME: join(home, "a") }]) {
      const read = new Set<string>();
      const spy = new Proxy({ ...env } as Record<string, string | undefined>, {
        get(t, k) {
          if (typeof k === "string") read.add(k);
          return t[k as string];
        },
        has(t, k) {
          if (typeof k === "string") read.add(k);
          return k in t;
        },
      });
      const saved = process.env;
      process.env = spy as NodeJS.ProcessEnv;
      try {
        await resolveContext({}, spy);
      } finally {
        process.env = saved;
      }
      for (const k of read) expect(CONFIG_ENV_INPUTS as readonly string[]).toContain(k);
    }
  });

  test("no key under an empty or blank approver token (no secret: anyone could key a cache entry; the runtime refuses it)", () => {
    const home = tempDir();
    const data = join(home, "data");
    mkdirSync(data);
    const env = { HOME: home, AIRLOCK_HOME: data };
    for (const blank of ["", "\n", "  \n\t"]) {
      writeFileSync(join(data, "approver-token"), blank, { mode: 0o600 });
      expect(configCacheKey({}, env)).toBeUndefined();
    }
    writeFileSync(join(data, "approver-token"), "a".repeat(64), { mode: 0o600 });
    expect(configCacheKey({}, env)?.key).toMatch(/^[0-9a-f]{64}$/);
  });

  test("changes with each input: every env variable, the config bytes, --config, --data-dir; a missing default config is a key too", () => {
    const home = tempDir();
    const data = join(home, "data");
    mkdirSync(data);
    writeFileSync(join(data, "approver-token"), "a".repeat(64), { mode: 0o600 });
    const env = { HOME: home, AIRLOCK_HOME: data };
    const k0 = configCacheKey({}, env)!;
    expect(k0.dataDir).toBe(pickDataDir({ env }).dir);
    expect(configCacheKey({}, env)!.key).toBe(k0.key);
    const keys = new Set([k0.key]);
    writeFileSync(join(data, "airlock.yaml"), "mode: smart\n");
    keys.add(configCacheKey({}, env)!.key);
    writeFileSync(join(data, "airlock.yaml"), "mode: smart \n");
    keys.add(configCacheKey({}, env)!.key);
    mkdirSync(join(data, "other"));
    writeFileSync(join(data, "other", "approver-token"), "a".repeat(64), { mode: 0o600 });
    for (const name of CONFIG_ENV_INPUTS) keys.add(configCacheKey({}, { ...env, [name]: `${(env as Record<string, string>)[name] ?? "/x"}/other` })!.key);
    keys.add(configCacheKey({ config: join(data, "airlock.yaml") }, env)!.key);
    keys.add(configCacheKey({ dataDir: home }, env)!.key);
    // --data-dir naming the folder $AIRLOCK_HOME names resolves the same config: the same key
    expect(configCacheKey({ dataDir: data }, env)!.key).toBe(configCacheKey({}, env)!.key);
    expect(keys.size).toBe(3 + CONFIG_ENV_INPUTS.length + 2);
    // keyed with the approver token: another token, another key; none (a first run): no key
    writeFileSync(join(data, "approver-token"), "b".repeat(64));
    keys.add(configCacheKey({}, env)!.key);
    expect(keys.size).toBe(3 + CONFIG_ENV_INPUTS.length + 3);
    rmSync(join(data, "approver-token"));
    expect(configCacheKey({}, env)).toBeUndefined();
    // an explicit --config that does not exist: no key (the normal path says why)
    expect(configCacheKey({ config: join(data, "nope.yaml") }, env)).toBeUndefined();
  });
});

describe("reading the cache", () => {
  function warm(): { slot: NonNullable<ReturnType<typeof configCacheKey>>; file: string; env: Record<string, string> } {
    const data = tempDir();
    writeFileSync(join(data, "airlock.yaml"), "mode: approve\n");
    const env = { HOME: data, AIRLOCK_HOME: data };
    const slot = configCacheKey({}, env)!;
    writeConfigCache(slot, {}, env, Config.parse({ mode: "approve" }), slot.text);
    return { slot, file: join(data, CONFIG_CACHE_FILE), env };
  }

  test("a hit: written 0600 by this user, read back with the same key", () => {
    const { slot, file } = warm();
    expect(readConfigCache(slot)?.mode).toBe("approve");
    expect(statSync(file).mode & 0o777).toBe(0o600);
  });

  test("a miss: another key, bad JSON, group- or other-writable, a symlink, another owner", () => {
    let w = warm();
    expect(readConfigCache({ ...w.slot, key: "0".repeat(64) })).toBeUndefined();
    writeFileSync(w.file, "{not json");
    expect(readConfigCache(w.slot)).toBeUndefined();
    for (const mode of [0o620, 0o602]) {
      w = warm();
      chmodSync(w.file, mode);
      expect(readConfigCache(w.slot)).toBeUndefined();
    }
    w = warm();
    renameSync(w.file, `${w.file}.real`);
    symlinkSync(`${w.file}.real`, w.file);
    expect(readConfigCache(w.slot)).toBeUndefined();
    if (process.getuid?.() === 0) {
      w = warm();
      chownSync(w.file, 65534, 65534);
      expect(readConfigCache(w.slot)).toBeUndefined();
    }
  });

  test("not written when the config file changed since the key was computed", () => {
    const data = tempDir();
    writeFileSync(join(data, "airlock.yaml"), "mode: approve\n");
    const env = { HOME: data, AIRLOCK_HOME: data };
    const slot = configCacheKey({}, env)!;
    writeFileSync(join(data, "airlock.yaml"), "mode: chat\n");
    writeConfigCache(slot, {}, env, Config.parse({ mode: "chat" }), slot.text);
    expect(() => readFileSync(join(data, CONFIG_CACHE_FILE))).toThrow();
  });
});

describe("when the early request is refused", () => {
  const cfg = (extra: Record<string, unknown> = {}) => Config.parse({ provider: { name: "openai", model: "m", base_url: "http://127.0.0.1:9/v1", api_key_env: "K" }, ...extra });
  const env = { K: "k" };
  const ws = tempDir();
  const opts = { ...BASE_OPTS, workspace: ws };

  test("allowed for the plain case, refused for every input that may change or block the first request", () => {
    expect(earlyRefusal("hi", opts, cfg(), env)).toBeUndefined();
    const hook = [{ hooks: [{ type: "command", command: "/bin/true" }] }];
    const refused: [string | undefined, RunOptions, Readonly<Config>, Record<string, string | undefined>][] = [
      [undefined, opts, cfg(), env],
      ["-", opts, cfg(), env],
      ["  ", opts, cfg(), env],
      ["a\ud800b", opts, cfg(), env],
      ["a\0b", opts, cfg(), env],
      ["hi", { ...opts, recipe: "r.yaml" }, cfg(), env],
      ["hi", { ...opts, param: { a: "b" } }, cfg(), env],
      ["hi", { ...opts, mode: "chat" }, cfg(), env],
      ["hi", { ...opts, sandbox: "read-only" }, cfg(), env],
      ["hi", { ...opts, provider: "openai" }, cfg(), env],
      ["hi", { ...opts, model: "x" }, cfg(), env],
      ["hi", { ...opts, workspace: join(ws, "missing") }, cfg(), env],
      ["hi", opts, cfg(), {}],
      ["hi", opts, Config.parse({ provider: { name: "anthropic", model: "m", api_key_env: "K" } }), env],
      ["hi", opts, Config.parse({ provider: { name: "openai-responses", model: "m", api_key_env: "K" } }), env],
      ["hi", opts, Config.parse({ provider: { name: "openai", base_url: "http://127.0.0.1:9/v1", api_key_env: "K" } }), env],
      ["hi", opts, cfg({ hooks: { import_claude_settings: true } }), env],
      ["hi", opts, cfg({ mcp_servers: { fs: { command: "/bin/true" } } }), env],
      ["hi", opts, cfg({ limits: { max_tokens_per_run: 1000 } }), env],
      ["hi", opts, Config.parse({ privacy: "private", provider: { name: "openai", model: "m", base_url: "https://example.com/v1", api_key_env: "K" } }), env],
      ["hi", opts, cfg({ storage: "postgres://u@h/db" }), env],
      ["hi", opts, cfg({ provider: { name: "openai", model: "m", base_url: "http://127.0.0.1:9/v1?q=1", api_key_env: "K" } }), env],
      ["hi", opts, cfg(), { ...env, AIRLOCK_DATABASE_URL: "postgres://u@h/db" }],
    ];
    for (const [p, o, c, e] of refused) expect([p, earlyRefusal(p, o, c, e)]).not.toEqual([p, undefined]);
    // every hook event of the schema is covered above
    const events = Object.keys(Config.parse({}).hooks).filter((k) => k !== "import_claude_settings");
    for (const e of events) expect(earlyRefusal("hi", opts, cfg({ hooks: { [e]: hook } }), env)).toBe(`hooks.${e}`);
    // a private session on a loopback server may send early (SPEC §10 allows it)
    expect(earlyRefusal("hi", opts, cfg({ privacy: "private" }), env)).toBeUndefined();
  });
});

describe("a run that starts without an approver token (a data dir's first)", () => {
  test("sends nothing; configLoaded keys the cache under the token made meanwhile, only for the text the file still has", async () => {
    for (const changed of [false, true]) {
      const data = tempDir();
      rmSync(join(data, "approver-token"));
      writeFileSync(join(data, "airlock.yaml"), "mode: approve\n");
      const env = { HOME: data, AIRLOCK_HOME: data };
      const start = (await startEarlyRequest("hi", BASE_OPTS, env))!;
      expect(start.sent).toBe(false);
      // what the runtime does before configLoaded: it creates the token
      writeFileSync(join(data, "approver-token"), "c".repeat(64), { mode: 0o600 });
      if (changed) writeFileSync(join(data, "airlock.yaml"), "mode: chat\n");
      start.configLoaded(Config.parse({ mode: "approve" }), "mode: approve\n");
      const slot = configCacheKey({}, env)!;
      expect([changed, readConfigCache(slot)?.mode]).toEqual([changed, changed ? undefined : "approve"]);
    }
  });
});

describe("the switch", () => {
  test("AIRLOCK_EARLY_REQUEST off: 0, false, off, no in any case and with spaces; anything else or unset leaves it on", () => {
    for (const v of ["0", "false", "FALSE", "Off", "no", " 0 ", "No\n"]) expect([v, earlySwitchedOff({ AIRLOCK_EARLY_REQUEST: v })]).toEqual([v, true]);
    for (const v of [undefined, "", "1", "true", "on", "yes", "00", "nope"]) expect([v, earlySwitchedOff({ AIRLOCK_EARLY_REQUEST: v })]).toEqual([v, false]);
  });
});

describe("the request's URL and its withdrawal", () => {
  test("chatCompletionsUrl is the URL the SDK posts to, with or without a trailing slash", () => {
    for (const base of ["http://127.0.0.1:9/v1", "http://127.0.0.1:9/v1/", "https://api.openai.com/v1", "http://h:1/api/v1//", "http://h:1", "http://[::1]:5/x/v1"]) {
      const sdk = new OpenAI({ apiKey: "k", baseURL: base });
      expect([base, chatCompletionsUrl(base)]).toEqual([base, sdk.buildURL("/chat/completions", undefined)]);
    }
  });

  test("a withdrawn early request is aborted: the server sees its connection closed, and nothing is sent again", async () => {
    const fake = startFakeOpenAI(() => ({ sse: [{ hang: true }] }));
    try {
      const data = tempDir();
      const ws = tempDir();
      writeFileSync(join(data, "airlock.yaml"), `provider:\n  name: openai\n  model: m\n  base_url: ${fake.url}\n  api_key_env: K\n`);
      const env = { HOME: data, AIRLOCK_HOME: data, K: "k" };
      const slot = configCacheKey({}, env)!;
      writeConfigCache(slot, {}, env, Config.parse({ provider: { name: "openai", model: "m", base_url: fake.url, api_key_env: "K" } }), slot.text);
      const start = await startEarlyRequest("hi", { ...BASE_OPTS, workspace: ws }, env);
      expect(start?.sent).toBe(true);
      expect(earlyRequestPending()).toBe(true);
      while (fake.requests.length === 0) await Bun.sleep(5);
      expect(withdrawEarlyRequest()).toBe(true);
      expect(earlyRequestPending()).toBe(false);
      while (fake.disconnects() === 0) await Bun.sleep(5);
      expect(fake.requests.length).toBe(1);
      expect(fake.requests[0].messages.at(-1)).toEqual({ role: "user", content: "hi" });
    } finally {
      await fake.close();
    }
  });
});
