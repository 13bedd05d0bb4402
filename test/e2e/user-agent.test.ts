/**
 * @module test/e2e/user-agent.test
 * The `User-Agent` of the provider requests `airlock run` sends through the SDKs is the SDK's own from source
 * (`OpenAI/JS <version>`, `Anthropic/JS <version>`) in the compiled binary too: the OpenAI SDK builds it from
 * its client class's `name`, which the binary's minified bundle renames (it sent `m/JS 6.49.0`), so the
 * `openai` adapter sets it explicitly (src/agent/providers/openai-defaults.ts `OPENAI_USER_AGENT`), and
 * `airlock run`'s early request sends the same. A first run in a data dir goes through the SDK; a second one
 * (warm config cache) sends its request early (told apart by the SDK's `x-stainless-retry-count`).
 */
import { describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI from "openai";
import Anthropic from "@anthropic-ai/sdk";
import { removeAfterAllTests } from "../cleanup.ts";
import { startFakeOpenAI, textChunks } from "../fixtures/fake-openai.ts";
import { anthropicMessage, startFakeAnthropic } from "../fixtures/fake-anthropic.ts";
import { fixture, startFakeResponses } from "../fixtures/fake-openai-responses.ts";
import { compiledBinary, REPO } from "../harness-binary.ts";

const SOURCE = [process.execPath, join(REPO, "src", "main.ts")];

/**
 * What each SDK itself sends, asked of its client in this (unminified) process: the expectation follows the SDK, so
 * an upgrade that changes its format fails here instead of our constant quietly differing from it.
 */
const SDK_UA = {
  openai: (new OpenAI({ apiKey: "x", baseURL: "http://127.0.0.1:9" }) as unknown as { getUserAgent(): string }).getUserAgent(),
  anthropic: (new Anthropic({ apiKey: "x", baseURL: "http://127.0.0.1:9" }) as unknown as { getUserAgent(): string }).getUserAgent(),
};

/** A fresh temp home whose data dir holds `config` (and the tokens a first run creates, so a second run sends early). */
function home(config: string): string {
  const dir = mkdtempSync(join(tmpdir(), "airlock-ua-"));
  removeAfterAllTests(dir);
  mkdirSync(join(dir, "data"));
  mkdirSync(join(dir, "ws"));
  writeFileSync(join(dir, "data", "airlock.yaml"), config);
  writeFileSync(join(dir, "data", "approver-token"), "a".repeat(64), { mode: 0o600 });
  writeFileSync(join(dir, "data", "api-token"), "b".repeat(64), { mode: 0o600 });
  return dir;
}

/** Runs `airlock run hi` in home `dir`; returns its exit code and output. */
async function runIn(cli: string[], dir: string): Promise<{ code: number; stdout: string; stderr: string }> {
  const data = join(dir, "data");
  const ws = join(dir, "ws");
  const proc = Bun.spawn([...cli, "run", "hi", "--headless", "--data-dir", data, "--workspace", ws], {
    cwd: ws,
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
    env: { PATH: "/usr/bin:/bin", HOME: dir, UA_KEY: "k" },
  });
  const [code, stdout, stderr] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  return { code, stdout, stderr };
}

const config = (name: string, url: string) => `provider:\n  name: ${name}\n  model: m\n  base_url: ${url}\n  api_key_env: UA_KEY\n`;

/** The `User-Agent`s of the requests of two runs of `cli` to a fake `openai` server: the SDK's own, then the early one. */
async function openAIUserAgents(cli: string[]): Promise<{ sdk: string | null; early: string | null }> {
  const fake = startFakeOpenAI(() => ({ sse: textChunks("ok") }));
  try {
    const dir = home(config("openai", fake.url));
    for (let i = 0; i < 2; i++) expect(await runIn(cli, dir)).toMatchObject({ code: 0, stdout: "ok\n" });
    expect(fake.requests.length).toBe(2);
    // the first through the SDK, the second sent early (the SDK's x-stainless-* headers are not sent early)
    expect(fake.headers.map((h) => h.has("x-stainless-retry-count"))).toEqual([true, false]);
    return { sdk: fake.headers[0]!.get("user-agent"), early: fake.headers[1]!.get("user-agent") };
  } finally {
    await fake.close();
  }
}

/** The `User-Agent` of the one request `cli`'s run sends to a fake `openai-responses` server (the client the `openai` adapter's is). */
async function responsesUserAgent(cli: string[]): Promise<string | null> {
  const fake = startFakeResponses(() => ({ sse: fixture("shell-call.2.sse") }));
  try {
    const r = await runIn(cli, home(config("openai-responses", fake.url)));
    expect({ code: r.code, stdout: r.stdout }).toEqual({ code: 0, stdout: "The shell printed responses-e2e-42.\n" });
    expect(fake.requests.length).toBe(1);
    return fake.headers[0]!.get("user-agent");
  } finally {
    await fake.close();
  }
}

/** The `User-Agent` of the one request `cli`'s run sends to a fake `anthropic` server. */
async function anthropicUserAgent(cli: string[]): Promise<string | null> {
  const fake = startFakeAnthropic(() => anthropicMessage([{ text: "ok" }]));
  try {
    const r = await runIn(cli, home(config("anthropic", fake.url)));
    expect({ code: r.code, stdout: r.stdout }).toEqual({ code: 0, stdout: "ok\n" });
    expect(fake.requests.length).toBe(1);
    return fake.headers[0]!.get("user-agent");
  } finally {
    await fake.close();
  }
}

describe("the provider requests' User-Agent", () => {
  test("is the SDK's own from source: OpenAI/JS <version> (the early request's and openai-responses' too), Anthropic/JS <version> (source CLI)", async () => {
    expect(SDK_UA).toEqual({ openai: expect.stringMatching(/^OpenAI\/JS \d/), anthropic: expect.stringMatching(/^Anthropic\/JS \d/) });
    const [openai, responses, anthropic] = await Promise.all([openAIUserAgents(SOURCE), responsesUserAgent(SOURCE), anthropicUserAgent(SOURCE)]);
    expect(openai).toEqual({ sdk: SDK_UA.openai, early: SDK_UA.openai });
    expect(responses).toBe(SDK_UA.openai);
    expect(anthropic).toBe(SDK_UA.anthropic);
  }, 120_000);

  test("is the same from the compiled (minified) binary", async () => {
    const bin = await compiledBinary();
    const [openai, responses, anthropic] = await Promise.all([openAIUserAgents([bin]), responsesUserAgent([bin]), anthropicUserAgent([bin])]);
    expect(openai).toEqual({ sdk: SDK_UA.openai, early: SDK_UA.openai });
    expect(responses).toBe(SDK_UA.openai);
    expect(anthropic).toBe(SDK_UA.anthropic);
  }, 300_000);
});
