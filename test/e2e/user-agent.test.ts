/**
 * @module test/e2e/user-agent.test
 * The `User-Agent` of the provider requests `airlock run` sends through the SDKs is the SDK's own from source
 * (`OpenAI/JS <version>`, `Anthropic/JS <version>`) in the compiled binary too: the OpenAI SDK builds it from
 * its client class's `name`, which the binary's minified bundle renames (it sent `m/JS 6.49.0`), so the
 * `openai` adapter sets it explicitly (src/agent/providers/openai.ts `OPENAI_USER_AGENT`). Cold runs only
 * (no config cache): the request goes through the SDK, not early (the early request sends no `User-Agent`).
 */
import { describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { VERSION as OPENAI_VERSION } from "openai/version";
import { VERSION as ANTHROPIC_VERSION } from "@anthropic-ai/sdk/version";
import { removeAfterAllTests } from "../cleanup.ts";
import { startFakeOpenAI, textChunks } from "../fixtures/fake-openai.ts";
import { anthropicMessage, startFakeAnthropic } from "../fixtures/fake-anthropic.ts";
import { compiledBinary, REPO } from "../harness-binary.ts";

const SOURCE = [process.execPath, join(REPO, "src", "main.ts")];

/** Runs `airlock run hi` once in a fresh temp home whose config is `config`; returns its exit code and output. */
async function runOnce(cli: string[], config: string): Promise<{ code: number; stdout: string; stderr: string }> {
  const dir = mkdtempSync(join(tmpdir(), "airlock-ua-"));
  removeAfterAllTests(dir);
  const data = join(dir, "data");
  const ws = join(dir, "ws");
  mkdirSync(data);
  mkdirSync(ws);
  writeFileSync(join(data, "airlock.yaml"), config);
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

/** The `User-Agent` of the one request `cli`'s run sends to a fake `openai` server. */
async function openAIUserAgent(cli: string[]): Promise<string | null> {
  const fake = startFakeOpenAI(() => ({ sse: textChunks("ok") }));
  try {
    const r = await runOnce(cli, config("openai", fake.url));
    expect({ code: r.code, stdout: r.stdout }).toEqual({ code: 0, stdout: "ok\n" });
    expect(fake.requests.length).toBe(1);
    expect(fake.headers[0]!.has("x-stainless-retry-count")).toBe(true); // the SDK's own request, not the early one
    return fake.headers[0]!.get("user-agent");
  } finally {
    await fake.close();
  }
}

/** The `User-Agent` of the one request `cli`'s run sends to a fake `anthropic` server. */
async function anthropicUserAgent(cli: string[]): Promise<string | null> {
  const fake = startFakeAnthropic(() => anthropicMessage([{ text: "ok" }]));
  try {
    const r = await runOnce(cli, config("anthropic", fake.url));
    expect({ code: r.code, stdout: r.stdout }).toEqual({ code: 0, stdout: "ok\n" });
    expect(fake.requests.length).toBe(1);
    return fake.headers[0]!.get("user-agent");
  } finally {
    await fake.close();
  }
}

describe("the provider requests' User-Agent", () => {
  test("is the SDK's own from source: OpenAI/JS <version>, Anthropic/JS <version> (source CLI)", async () => {
    const [openai, anthropic] = await Promise.all([openAIUserAgent(SOURCE), anthropicUserAgent(SOURCE)]);
    expect(openai).toBe(`OpenAI/JS ${OPENAI_VERSION}`);
    expect(anthropic).toBe(`Anthropic/JS ${ANTHROPIC_VERSION}`);
  }, 120_000);

  test("is the same from the compiled (minified) binary", async () => {
    const bin = await compiledBinary();
    const [openai, anthropic] = await Promise.all([openAIUserAgent([bin]), anthropicUserAgent([bin])]);
    expect(openai).toBe(`OpenAI/JS ${OPENAI_VERSION}`);
    expect(anthropic).toBe(`Anthropic/JS ${ANTHROPIC_VERSION}`);
  }, 300_000);
});
