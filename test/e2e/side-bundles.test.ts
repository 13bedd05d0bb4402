/**
 * @module test/e2e/side-bundles.test
 * The compiled binary's side bundles and compressed QuickJS WASM (src/side/, build/side.ts), run from a
 * copy alone in an empty folder: `--check-embedded` loads the MCP SDK, the ACP SDK and pg-boss from
 * memory and compiles the WASM; a binary whose embedded pg-boss or WASM bytes were changed refuses with
 * `binary_corrupt` naming the file; a real MCP server starts and lists its tools through the embedded
 * SDK (`airlock mcp check`). ACP through the binary is test/e2e/acp.test.ts, scripts test/e2e/script-binary.test.ts.
 */
import { afterAll, expect, test } from "bun:test";
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { stringify } from "yaml";
import { moduleGraph } from "../../scripts/bench/embedded.ts";
import { compiledBinary, REPO, runBinary } from "../harness-binary.ts";

const FS_SERVER = join(REPO, "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
// outside /tmp: confined processes get a private /tmp
const base = realpathSync(mkdtempSync(join("/var/tmp", "airlock-side-")));
afterAll(() => rmSync(base, { recursive: true, force: true }));

test("--check-embedded loads every side bundle from memory, compiles the embedded QuickJS WASM and reads its memory layout", async () => {
  const r = await runBinary(await compiledBinary(), ["--check-embedded"]);
  expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" });
  const got = JSON.parse(r.stdout);
  expect(Object.keys(got.side).sort()).toEqual(["acp", "mcp", "pgBoss"]);
  expect(got.side.mcp).toEqual(["Client", "ErrorCode", "McpError", "ReadBuffer", "ToolListChangedNotificationSchema", "serializeMessage"]);
  expect(got.side.acp).toEqual(expect.arrayContaining(["PROTOCOL_VERSION", "ndJsonStream", "RequestError", "methods"]));
  expect(got.side.pgBoss).toEqual(expect.arrayContaining(["PgBoss"]));
  expect(got.quickjs_wasm).toBe(true);
  // the embedded build's memory layout is read (its scripts run in restored guest snapshots: src/script/snapshot.ts)
  expect(got.quickjs_layout).toEqual({ staticEnd: 90_208, heapBase: 5_333_088, breakAt: 86_864 });
}, 300_000);

for (const [file, name] of [
  ["pg-boss.js", "pg-boss"],
  ["quickjs.wasm", "quickjs-wasm"],
] as const) {
  test(`a binary whose embedded ${file} was changed refuses with binary_corrupt (exit 1)`, async () => {
    const bin = await compiledBinary();
    const bytes = readFileSync(bin);
    const [stem, ext] = file.split(".");
    const entry = moduleGraph(bytes).files.find((f) => new RegExp(`^${stem}-[0-9a-f]{16}\\.${ext}-.*\\.zst$`).test(f.name));
    if (!entry) throw new Error(`no embedded ${file} in the binary`);
    const at = entry.contents_offset + (entry.contents_bytes >> 1);
    bytes[at] = bytes[at]! ^ 0xff;
    const dir = mkdtempSync(join(base, "tampered-"));
    const copy = join(dir, "airlock");
    writeFileSync(copy, bytes, { mode: 0o755 });
    const r = await runBinary(copy, ["--check-embedded"]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe("");
    expect(r.stderr).toContain(`the embedded ${name}`);
    expect(r.stderr).toContain("download the release again");
  }, 300_000);
}

test("an MCP server starts and lists its tools through the embedded MCP SDK (airlock mcp check)", async () => {
  const dir = mkdtempSync(join(base, "mcp-"));
  const bin = join(dir, "airlock");
  copyFileSync(await compiledBinary(), bin);
  const data = join(dir, "data");
  mkdirSync(data, { mode: 0o700 });
  writeFileSync(join(data, "turns.yaml"), "turns:\n  - text: hi\n");
  writeFileSync(join(data, "airlock.yaml"), stringify({ provider: { name: "scripted", script: "turns.yaml" }, mcp_servers: { fs: { command: process.execPath, args: [FS_SERVER, "."], sandbox: "read-only" } } }));
  const r = await runBinary(bin, ["mcp", "check", "fs", "--json", "--timeout", "120", "--data-dir", data], "", 180_000);
  expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" });
  const got = JSON.parse(r.stdout);
  expect(got.checks[0]).toMatchObject({ name: "mcp:fs", status: "ok", message: expect.stringContaining("read_text_file") });
}, 300_000);
