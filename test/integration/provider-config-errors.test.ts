/**
 * Errors that name the cause, through the real `airlock run` against a local OpenAI-compatible fake
 * server: no model configured and an unset key variable are configuration errors at start (exit 2, no
 * model call); a base_url without /v1, an HTML page from a proxy and a 401 with no key sent fail the turn
 * (exit 1) with a message that says what is wrong and what to change.
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stringify } from "yaml";
import { startFakeOpenAI, textChunks, type FakeOpenAI, type Responder } from "../fixtures/fake-openai.ts";

const MAIN = join(import.meta.dir, "../../src/main.ts");
let dir: string;
const servers: FakeOpenAI[] = [];

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "airlock-provider-cfg-"));
  mkdirSync(join(dir, "ws"));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

function serve(r: Responder): FakeOpenAI {
  const s = startFakeOpenAI(r);
  servers.push(s);
  return s;
}

/** `airlock run <args>` with a data dir holding `config` as airlock.yaml; no API key variable in its environment. */
async function airlock(name: string, config: Record<string, unknown> | null, args: string[], env: Record<string, string> = {}) {
  const data = join(dir, name);
  mkdirSync(data, { recursive: true });
  if (config) writeFileSync(join(data, "airlock.yaml"), stringify(config));
  const p = Bun.spawn([process.execPath, MAIN, "run", ...args, "--headless", "--data-dir", data], {
    cwd: join(dir, "ws"),
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: dir, AIRLOCK_HOME: "", ...env },
  });
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { stdout, stderr, code, data };
}

describe("configuration errors at start (exit 2, no model call)", () => {
  test("no model configured: the default config is config_invalid, not a placeholder answer with exit 0", async () => {
    const r = await airlock("nomodel", null, ["summarise README.md", "--output-format", "json"]);
    expect(r.code).toBe(2);
    expect(JSON.parse(r.stdout)).toMatchObject({ status: "invalid", session_id: null, error: { code: "config_invalid" } });
    expect(r.stderr).toContain("no model configured");
    expect(r.stderr).toContain("Set provider.name, provider.model and provider.base_url");
  });

  test("an unset api_key_env for a remote server says the variable is unset", async () => {
    const r = await airlock("nokey", { provider: { name: "openai", model: "gpt-4.1-mini", base_url: "https://api.example.invalid/v1", api_key_env: "MY_OPENAI_KEY" } }, ["hi"]);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr).toContain("airlock: config_invalid: provider.api_key_env: the environment variable MY_OPENAI_KEY is unset (or empty)");
    expect(r.stderr).not.toContain("refused");
    // the default variable, for the default endpoint, the same way
    const d = await airlock("nokey-default", { provider: { name: "openai" } }, ["hi"]);
    expect(d.code).toBe(2);
    expect(d.stderr).toContain("the environment variable OPENAI_API_KEY is unset");
  });

  test("airlock serve with an unset key variable exits 2 at start, saying so, instead of listening", async () => {
    const data = join(dir, "serve-nokey");
    mkdirSync(data, { recursive: true });
    writeFileSync(join(data, "airlock.yaml"), stringify({ provider: { name: "openai", model: "gpt-4.1-mini" } }));
    const p = Bun.spawn([process.execPath, MAIN, "serve", "--port", "0", "--data-dir", data], {
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: dir, AIRLOCK_HOME: "" },
    });
    let stderr = "";
    const reader = p.stderr.pipeThrough(new TextDecoderStream()).getReader();
    const listening = (async () => {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return false;
        stderr += value;
        if (stderr.includes("listening on")) return true;
      }
    })();
    const first = await Promise.race([p.exited.then(() => "exited"), listening.then((l) => (l ? "listening" : "eof"))]);
    if (first === "listening") p.kill("SIGKILL");
    expect(await p.exited).toBe(2);
    await listening;
    expect(stderr).toContain("the environment variable OPENAI_API_KEY is unset");
  });

  test("an OpenAI-compatible base_url without provider.model is config_invalid naming the key", async () => {
    const fake = serve(() => textChunks("never"));
    const r = await airlock("nomodel-openai", { provider: { name: "openai", base_url: fake.url } }, ["hi"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("provider.model: not set");
    expect(fake.requests.length).toBe(0);
  });
});

describe("turn failures that name the cause (exit 1)", () => {
  test("a base_url without /v1: the 404 says so and suggests the fix", async () => {
    const fake = serve(() => textChunks("never"));
    const bare = fake.url.replace(/\/v1$/, "");
    const r = await airlock("no-v1", { provider: { name: "openai", base_url: bare, model: "llama3.1" } }, ["hi", "--output-format", "json"]);
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout)).toMatchObject({ status: "failed", error: { code: "provider_error" } });
    expect(r.stderr).toContain("does not end in /v1");
    expect(r.stderr).toContain(`Try provider.base_url: ${bare}/v1`);
  });

  test("an HTML page from a proxy: 'HTML page from <url>' with the status, not retried", async () => {
    const fake = serve(() => ({ status: 502, body: "<!doctype html><html><body>Bad Gateway</body></html>", headers: { "content-type": "text/html" } }));
    const r = await airlock("html", { provider: { name: "openai", base_url: fake.url, model: "llama3.1", max_retries: 3 } }, ["hi"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`HTML page from ${fake.url}/chat/completions (HTTP 502)`);
    expect(fake.requests.length).toBe(1);
  });

  test("a 401 from a local server when the key variable is unset says it is unset", async () => {
    const fake = serve(() => ({ status: 401, body: { error: { message: "Unauthorized", type: "invalid_request_error" } } }));
    const r = await airlock("local-401", { provider: { name: "openai", base_url: fake.url, model: "m", api_key_env: "VLLM_KEY" } }, ["hi"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("the environment variable VLLM_KEY is unset, so none was sent");
    expect(fake.requests.length).toBe(1);
  });
});
