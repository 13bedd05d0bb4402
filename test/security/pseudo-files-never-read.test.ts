/**
 * @module test/security/pseudo-files-never-read
 * config/paths.ts `readRegularFile` refused FIFOs and devices, but a file of the kernel's pseudo filesystems is a
 * "regular file" to fstat (size 0 under /proc, 4096 under /sys) and was read — and some reads take what they return:
 * as root, a link the model wrote at a workspace's `.claude/settings.json` to `/proc/kmsg` had airlock consume kernel
 * log lines that syslog then never got (the eleventh session's attack notes); tracefs's `trace_pipe` likewise. Now a
 * file whose descriptor's real path is under `/proc/` or `/sys/` is refused (`ENOTREG`) before any read. Seen here in
 * a real child process through links to `/proc/self/status` and `/sys/devices/system/cpu/online` (reads without side
 * effects whose content would otherwise come back), and through the settings reader with the model's link.
 */
import { afterAll, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const SRC = join(import.meta.dir, "..", "..", "src");
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** Runs `code` (TypeScript, top-level await) in a fresh Bun process; its stdout. */
function inChild(code: string): string {
  const r = Bun.spawnSync([process.execPath, "-e", code], { stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  return r.stdout.toString() + r.stderr.toString();
}

for (const target of ["/proc/self/status", "/sys/devices/system/cpu/online"]) {
  test(`readRegularFile refuses a link to ${target} without reading it`, () => {
    const dir = mkdtempSync(join(tmpdir(), "airlock-pseudo-"));
    dirs.push(dir);
    const link = join(dir, "airlock.yaml");
    symlinkSync(target, link);
    const out = inChild(`
import { readRegularFile } from ${JSON.stringify(join(SRC, "config", "paths.ts"))};
for (const follow of [true]) {
  try { console.log("READ " + JSON.stringify(readRegularFile(${JSON.stringify(link)}, { maxBytes: 1 << 20 }).toString("utf8"))); }
  catch (e) { console.log((e as NodeJS.ErrnoException).code + " " + (e as Error).message); }
}
try { console.log("READ " + JSON.stringify(readRegularFile(${JSON.stringify(target)}).toString("utf8"))); }
catch (e) { console.log((e as NodeJS.ErrnoException).code + " " + (e as Error).message); }
`);
    expect(out).not.toContain("READ");
    expect(out.match(/ENOTREG .* is a kernel pseudo file/g)?.length).toBe(2);
  });
}

test("a workspace's .claude/settings.json linked to /proc/self/environ is refused as a pseudo file, not read and parsed", () => {
  const ws = mkdtempSync(join(tmpdir(), "airlock-pseudo-ws-"));
  dirs.push(ws);
  mkdirSync(join(ws, ".claude"));
  symlinkSync("/proc/self/environ", join(ws, ".claude", "settings.json"));
  const out = inChild(`
import { readSettingsFile } from ${JSON.stringify(join(SRC, "config", "claude-settings.ts"))};
try { readSettingsFile(${JSON.stringify(join(ws, ".claude", "settings.json"))}, "hooks.import_claude_settings"); console.log("read?"); }
catch (e) { console.log((e as Error).message); }
`);
  expect(out).toContain("is a kernel pseudo file (/proc/");
  expect(out).not.toContain("not JSON");
});

test("an ordinary file, an empty one and a link to one are still read", () => {
  const dir = mkdtempSync(join(tmpdir(), "airlock-pseudo-ok-"));
  dirs.push(dir);
  const out = inChild(`
import { writeFileSync, symlinkSync } from "node:fs";
import { readRegularFile } from ${JSON.stringify(join(SRC, "config", "paths.ts"))};
writeFileSync(${JSON.stringify(join(dir, "a"))}, "mode: smart\\n");
writeFileSync(${JSON.stringify(join(dir, "empty"))}, "");
symlinkSync(${JSON.stringify(join(dir, "a"))}, ${JSON.stringify(join(dir, "link"))});
console.log(JSON.stringify([readRegularFile(${JSON.stringify(join(dir, "a"))}, { maxBytes: 100 }).toString(), readRegularFile(${JSON.stringify(join(dir, "empty"))}).toString(), readRegularFile(${JSON.stringify(join(dir, "link"))}).toString()]));
`);
  expect(out.trim()).toBe(JSON.stringify(["mode: smart\n", "", "mode: smart\n"]));
});
