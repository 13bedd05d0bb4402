/**
 * @module test/e2e/cancel-mcp-start
 * `airlock run --headless` (the compiled binary) gets SIGTERM or SIGINT while an MCP server it is
 * starting never answers `initialize` (timeout_s 600, far past the test's timeout): the run ends
 * `cancelled`, exit 130, instead of waiting out the server's start.
 */
import { afterEach, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, watch } from "node:fs";
import { join } from "node:path";
import { ensureBinary, makeSandbox, parseNdjson, spawnAirlock, type Sandbox } from "./headless-helpers.ts";

const boxes: Sandbox[] = [];
beforeAll(async () => {
  await ensureBinary();
}, 120_000);
afterEach(() => {
  for (const b of boxes.splice(0)) b.cleanup();
});

/** Resolves when file `name` exists in folder `dir` (watched, not polled). */
function fileAppears(dir: string, name: string): Promise<void> {
  return new Promise((resolve) => {
    const done = (): boolean => {
      if (!existsSync(join(dir, name))) return false;
      w.close();
      resolve();
      return true;
    };
    const w = watch(dir, done);
    done();
  });
}

describe("airlock run: a signal while an MCP server starts", () => {
  for (const signal of ["SIGTERM", "SIGINT"] as const) {
    test(`${signal} ends the run cancelled (exit 130) although the server never answers initialize`, async () => {
      const b = makeSandbox({
        config: { mcp_servers: { mute: { command: "sh", args: ["-c", "touch started; exec sleep 600"], timeout_s: 600 } } },
        turns: { turns: [{ tool_calls: [{ name: "mute__anything", arguments: {} }] }, { text: "never" }] },
      });
      boxes.push(b);
      const p = spawnAirlock(b, ["run", "go", "--headless", "--output-format", "stream-json", "--data-dir", b.dataDir]);
      await fileAppears(b.workspace, "started");
      p.proc.kill(signal);
      const r = await p.done;
      expect(r.code).toBe(130);
      expect(parseNdjson(r.stdout).at(-1)).toMatchObject({ type: "result", status: "cancelled" });
    }, 50_000);
  }
});
