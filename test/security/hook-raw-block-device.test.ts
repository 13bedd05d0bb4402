/**
 * @module test/security/hook-raw-block-device.test
 * A hook sees the data dir's tokens as empty files, but a hook of an airlock running as root (no
 * capabilities, uid 0 still) could open the host's block devices, which root owns (`brw-------`,
 * `brw-rw---- root disk`): reading the raw disk under the data dir returned the approver token. The
 * data dir here lives on a real ext4 filesystem on a loop device (needs root and a free loop device;
 * skipped otherwise). Run as root and as nobody, through the real hook runner and real bubblewrap.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { IS_ROOT, testUsers } from "../as-user.ts";
import { ownedDir, probeEnv, removeTempDirs, runProbe, tempBase } from "./probe.ts";

const SECRET = `APPROVER-ON-DISK-${crypto.randomUUID()}`;
const work = mkdtempSync("/var/tmp/airlock-blockdev-");
const mnt = join(work, "mnt");
let loop: string | undefined;

function sh(argv: string[]): { ok: boolean; out: string } {
  const r = Bun.spawnSync(argv, { stdout: "pipe", stderr: "pipe" });
  return { ok: r.exitCode === 0, out: r.stdout.toString().trim() };
}

beforeAll(() => {
  if (!IS_ROOT) return;
  const img = join(work, "fs.img");
  writeFileSync(img, new Uint8Array(8 * 1024 * 1024));
  if (!sh(["mkfs.ext4", "-q", img]).ok) return;
  const l = sh(["losetup", "-f", "--show", img]);
  if (!l.ok || !l.out.startsWith("/dev/")) return;
  loop = l.out;
  mkdirSync(mnt);
  if (!sh(["mount", loop, mnt]).ok) {
    sh(["losetup", "-d", loop]);
    loop = undefined;
    return;
  }
  // The device must be readable by root here, or the test proves nothing (a device cgroup may forbid it).
  if (!sh(["sh", "-c", `head -c 512 ${loop} >/dev/null`]).ok) {
    sh(["umount", mnt]);
    sh(["losetup", "-d", loop]);
    loop = undefined;
  }
});

afterAll(() => {
  if (loop) {
    sh(["umount", mnt]);
    sh(["losetup", "-d", loop]);
  }
  rmSync(work, { recursive: true, force: true });
  removeTempDirs();
});

describe("hooks cannot read raw block devices", () => {
  test.skipIf(!IS_ROOT)("a hook cannot read the data dir's tokens off the raw disk (host block devices are not in its /dev), for every user", async () => {
    if (!loop) {
      console.warn("skipped: no usable loop device here");
      return;
    }
    const seen: Record<string, string> = {};
    for (const user of testUsers()) {
      const data = join(mnt, `data-${user.name}`);
      mkdirSync(data, { mode: 0o700 });
      writeFileSync(join(data, "approver-token"), `${SECRET}-${user.name}\n`, { mode: 0o600 });
      chownSync(data, user.uid, user.uid);
      chownSync(join(data, "approver-token"), user.uid, user.uid);
      Bun.spawnSync(["sync"]);
      const base = tempBase("airlock-blockdev-");
      const home = ownedDir(user, base, "home");
      const ws = ownedDir(user, base, "ws");
      const out = join(ws, "seen.txt");
      const hook = `{ cat ${data}/approver-token; grep -a -o '${SECRET}-${user.name}' ${loop} | head -1; echo end; } > ${out} 2>/dev/null; echo '{}'`;
      const verdict = await runProbe(user, { kind: "hook", command: hook, cwd: ws, dataDir: data }, probeEnv(home));
      expect(verdict).toEqual({ kind: "allow", inspector: "hook" });
      seen[user.name] = existsSync(out) ? readFileSync(out, "utf8") : "no output";
    }
    for (const [name, out] of Object.entries(seen)) expect({ name, out }).toEqual({ name, out: "end\n" });
  }, 120_000);
});
