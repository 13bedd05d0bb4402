/**
 * @module test/security/pseudo-fs-mounted-elsewhere
 * config/paths.ts `readRegularFile` refused a kernel pseudo file only by its descriptor's real path (under `/proc/` or
 * `/sys/`). A procfs or sysfs mounted anywhere else — a second `mount -t proc`, a bind mount of `/proc` or `/sys`
 * (a monitoring container's `-v /proc:/host/proc`), a bind mount of one pseudo file onto an ordinary path — has real
 * paths outside both, and its files were read: a workspace link `.claude/settings.json -> /host/proc/kmsg` had airlock,
 * as root, consume kernel log lines again. Now the file system itself decides (statfs f_type of the path before the
 * open, and of `/proc/self/fd/N` on the descriptor). Proven in a private mount namespace (`unshare -m`, the host's
 * mounts untouched), as root and as `nobody` (the mounts are made as root, then the reader drops to nobody).
 */
import { describe, expect, test } from "bun:test";
import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { IS_ROOT, sharedTempDir, testUsers } from "../as-user.ts";

const SRC = join(import.meta.dir, "..", "..", "src");

/** True when this process may make a private mount namespace and mount procfs in it (root, unshare present). */
function canMount(): boolean {
  if (!IS_ROOT) return false;
  const dir = sharedTempDir("airlock-pseudo-probe-");
  const r = Bun.spawnSync(["unshare", "-m", "--propagation", "private", "sh", "-c", `mount -t proc proc ${dir} && test -e ${dir}/self/status`], { stdout: "ignore", stderr: "ignore" });
  return r.exitCode === 0;
}

const MOUNTS = canMount();

describe.skipIf(!MOUNTS)("a kernel pseudo file system mounted outside /proc and /sys", () => {
  for (const user of testUsers()) {
    test(`is refused unread by readRegularFile and the settings reader (${user.name})`, () => {
      const root = sharedTempDir("airlock-pseudo-mnt-");
      const proc2 = join(root, "proc2");
      const sys2 = join(root, "sys2");
      const ws = join(root, "ws");
      mkdirSync(proc2);
      mkdirSync(sys2);
      mkdirSync(join(ws, ".claude"), { recursive: true, mode: 0o777 });
      // the model's link to the second procfs, and an ordinary-looking file that is one sysfs file bind-mounted
      symlinkSync(join(proc2, "self", "status"), join(ws, ".claude", "settings.json"));
      const single = join(ws, ".claude", "settings.local.json");
      writeFileSync(single, "{}\n", { mode: 0o644 });
      const targets = [join(proc2, "self", "status"), join(proc2, "version"), join(sys2, "devices", "system", "cpu", "online"), single];
      const code = `
import { openSync } from "node:fs";
import { pseudoFileAt, readRegularFile } from ${JSON.stringify(join(SRC, "config", "paths.ts"))};
import { readSettingsFile } from ${JSON.stringify(join(SRC, "config", "claude-settings.ts"))};
for (const p of ${JSON.stringify(targets)}) {
  try { console.log("READ " + p + " " + JSON.stringify(readRegularFile(p, { maxBytes: 1 << 20 }).toString("utf8").slice(0, 30))); }
  catch (e) { console.log("REFUSED " + (e as NodeJS.ErrnoException).code + " " + (e as Error).message); }
  // the descriptor's own check, as when a regular file is swapped for the pseudo one after the check by name
  console.log("FD " + String(pseudoFileAt(openSync(p, "r"))));
}
for (const f of ["settings.json", "settings.local.json"]) {
  try { readSettingsFile(${JSON.stringify(join(ws, ".claude"))} + "/" + f, "hooks.import_claude_settings"); console.log("READ " + f); }
  catch (e) { console.log("SETTINGS " + (e as Error).message); }
}
`;
      const script = [
        `mount -t proc proc ${proc2}`,
        `mount --bind /sys ${sys2}`,
        `mount --bind /sys/devices/system/cpu/online ${single}`,
        `exec ${[...user.prefix, process.execPath].map((w) => `'${w}'`).join(" ")} -e "$0"`,
      ].join(" && ");
      const r = Bun.spawnSync(["unshare", "-m", "--propagation", "private", "sh", "-c", script, code], { stdin: "ignore", stdout: "pipe", stderr: "pipe" });
      const out = r.stdout.toString() + r.stderr.toString();
      expect(out).not.toContain("READ ");
      expect(out.match(/REFUSED ENOTREG .* is a kernel pseudo file \(.* on (proc|sysfs)\)/g)?.length).toBe(targets.length);
      expect(out.match(/FD .* on (proc|sysfs)/g)?.length).toBe(targets.length);
      expect(out.match(/SETTINGS .*kernel pseudo file/g)?.length).toBe(2);
    });
  }
});
