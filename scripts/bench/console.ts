/**
 * @module scripts/bench/console
 * The watcher's console, measured in Debian's chromium against the compiled binary: park → drawn latency
 * (p50/p99 over 100 cards), the gzip bytes transferred for the page, and the page's JS heap after 10,000
 * events. The browser is driven from Node (scripts/bench/console-browser.mjs), since playwright's launch is
 * unreliable under Bun. Prints one JSON object.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { compiledBinary } from "../../test/harness-binary.ts";

const bin = await compiledBinary();
const tmp = mkdtempSync(join(tmpdir(), "airlock-bench-console-"));
try {
  const proc = Bun.spawn(["node", join(import.meta.dir, "console-browser.mjs"), JSON.stringify({ bin, tmp, cards: 100, events: 10_000 })], { stdout: "pipe", stderr: "inherit" });
  const [code, out] = await Promise.all([proc.exited, new Response(proc.stdout).text()]);
  if (code !== 0) throw new Error(`console-browser.mjs exited ${code}`);
  process.stdout.write(out.trim().split("\n").pop()! + "\n");
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
