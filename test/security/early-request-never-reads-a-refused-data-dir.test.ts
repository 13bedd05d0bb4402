/**
 * @module test/security/early-request-never-reads-a-refused-data-dir
 * `airlock run`'s early request (SPEC §2) reads the data dir's `airlock.yaml`, `approver-token` and
 * `config-cache.json` before the runtime resolves the data dir. A data dir the runtime refuses (another user's, or
 * one its group or others may write: `data_dir_unusable`, "before anything in it is read") must not be read there
 * either, nor a request sent from what is in it: the run exits 2 with nothing sent to the provider.
 */
import { expect, test } from "bun:test";
import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { removeAfterAllTests } from "../cleanup.ts";
import { startFakeOpenAI, textChunks } from "../fixtures/fake-openai.ts";

const MAIN = join(import.meta.dir, "..", "..", "src", "main.ts");

test("a warm cache in a data dir others may write (mode 0777) sends no early request; the run is refused (exit 2)", async () => {
  const fake = startFakeOpenAI(() => textChunks("ok"));
  const dir = mkdtempSync(join(tmpdir(), "airlock-early-refused-"));
  removeAfterAllTests(dir);
  const data = join(dir, "data");
  const ws = join(dir, "ws");
  mkdirSync(data, { mode: 0o700 });
  mkdirSync(ws);
  writeFileSync(join(data, "airlock.yaml"), `provider:\n  name: openai\n  model: m\n  base_url: ${fake.url}\n  api_key_env: BENCH_KEY\n`);
  const run = async () => {
    const proc = Bun.spawn(["timeout", "-s", "KILL", "60", process.execPath, MAIN, "run", "hi", "--headless", "--data-dir", data, "--workspace", ws], {
      cwd: ws,
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
      env: { PATH: "/usr/bin:/bin", HOME: dir, BENCH_KEY: "k" },
    });
    const [code, stdout, stderr] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
    return { code, stdout, stderr };
  };
  const cold = await run();
  expect(cold.code, cold.stderr).toBe(0);
  expect(fake.requests.length).toBe(1);
  // now others may write it (the cache, the token and the config still this user's)
  // a second run at mode 0700 warms the cache and is sent early (no SDK header): the early path is live here
  const warm = await run();
  expect(warm.code, warm.stderr).toBe(0);
  expect(fake.requests.length).toBe(2);
  expect(fake.headers[1]!.has("x-stainless-retry-count")).toBe(false);
  chmodSync(data, 0o777);
  const refused = await run();
  expect(refused.stderr).toContain("data_dir_unusable");
  expect(refused.code).toBe(2);
  expect(fake.requests.length).toBe(2);
}, 120_000);
