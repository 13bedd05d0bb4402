/**
 * @module test/e2e/tool-specs-binary.test
 * The compiled binary sends the model the built-in tools' argument JSON Schemas recorded at build time
 * (src/tool/canned-specs.ts, build/tool-specs.ts); the source CLI converts them from zod on the turn. The
 * two must send the very same `tools` in the request body, for every built-in tool (`tools.offer: both`).
 */
import { describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { removeAfterAllTests } from "../cleanup.ts";
import { startFakeOpenAI, textChunks } from "../fixtures/fake-openai.ts";
import { compiledBinary, REPO } from "../harness-binary.ts";

/** Runs `argv` to its end with a fresh data dir holding `config`; returns the `tools` of its one model request. */
async function toolsSent(argv: string[], config: (url: string) => string): Promise<unknown> {
  const fake = startFakeOpenAI(() => textChunks("ok"));
  try {
    const dir = mkdtempSync(join(tmpdir(), "airlock-tool-specs-"));
    removeAfterAllTests(dir);
    const data = join(dir, "data");
    const ws = join(dir, "ws");
    mkdirSync(data);
    mkdirSync(ws);
    writeFileSync(join(data, "airlock.yaml"), config(fake.url));
    const proc = Bun.spawn([...argv, "run", "hi", "--headless", "--data-dir", data, "--workspace", ws], {
      cwd: ws,
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
      env: { PATH: "/usr/bin:/bin", HOME: dir, BENCH_KEY: "k" },
    });
    const [code, , stderr] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
    expect({ code, stderr: code === 0 ? "" : stderr }).toEqual({ code: 0, stderr: "" });
    expect(fake.requests.length).toBe(1);
    return fake.requests[0].tools;
  } finally {
    await fake.close();
  }
}

describe("the built-in tools' schemas in the compiled binary", () => {
  test("the binary sends the model the same tools as the source CLI, for every built-in tool", async () => {
    const bin = await compiledBinary();
    for (const offer of ["both", "code"]) {
      const config = (url: string) => `provider:\n  name: openai\n  model: m\n  base_url: ${url}\n  api_key_env: BENCH_KEY\ntools:\n  offer: ${offer}\n`;
      const [fromBinary, fromSource] = await Promise.all([toolsSent([bin], config), toolsSent([process.execPath, join(REPO, "src", "main.ts")], config)]);
      expect(fromBinary).toEqual(fromSource);
      const names = (fromSource as { function: { name: string } }[]).map((t) => t.function.name).sort();
      // the comparison sees the tools: all eleven built-ins with `both`, the code and subagent tools with `code`
      expect(names.length).toBe(offer === "both" ? 11 : 4);
      expect(JSON.stringify(fromBinary)).toBe(JSON.stringify(fromSource));
    }
  }, 300_000);
});
