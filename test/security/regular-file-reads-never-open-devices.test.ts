/**
 * @module test/security/regular-file-reads-never-open-devices
 * config/paths.ts `readRegularFile` (tokens, config, recipes, Claude Code settings — a project's are in a workspace
 * the model writes, so `.claude/settings.json` can be its link to any device) opened the path first and refused a
 * non-file only after, by fstat. Opening a device is an act of its own: `/dev/watchdog` is armed by an open (and
 * reboots the host unless fed) when airlock runs as root, a tape rewinds, a FIFO's open releases a writer blocked on
 * it. Now a path that is no regular file is refused without being opened (the fstat on the descriptor still decides
 * when one is swapped in after). Seen here through `/dev/tty` in a process with no controlling terminal: its open
 * fails with ENXIO, so ENXIO means it was opened; a real child process, a model-planted link.
 */
import { expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const SRC = join(import.meta.dir, "..", "..", "src");

test("a workspace's .claude/settings.json linked to a device is refused without opening the device", () => {
  const ws = mkdtempSync(join(tmpdir(), "airlock-device-link-"));
  try {
    mkdirSync(join(ws, ".claude"));
    symlinkSync("/dev/tty", join(ws, ".claude", "settings.json"));
    const code = `
import { readSettingsFile } from ${JSON.stringify(join(SRC, "config", "claude-settings.ts"))};
try { readSettingsFile(${JSON.stringify(join(ws, ".claude", "settings.json"))}, "hooks.import_claude_settings"); console.log("read?"); }
catch (e) { console.log((e as Error).message); }
`;
    // setsid: no controlling terminal, so an open of /dev/tty fails with ENXIO — the trace of an open
    const r = Bun.spawnSync(["setsid", "-w", process.execPath, "-e", code], { stdin: "ignore", stdout: "pipe", stderr: "pipe" });
    const out = r.stdout.toString();
    expect(out).toContain("not a regular file");
    expect(out).not.toContain("ENXIO");
  } finally {
    rmSync(ws, { recursive: true, force: true });
  }
});
