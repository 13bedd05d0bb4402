/**
 * @module test/security/sandbox-no-capabilities.test
 * Confined processes hold no capabilities, whoever airlock runs as: with airlock as root, a
 * `read-only` process used to keep `CapEff 000001fffeffffff`, so `mount -o remount,bind,rw /` wrote
 * on the host and `mount --bind / /dev/shm/r` read the data dir with both tokens. Run as root and as
 * nobody (test/as-user.ts), through the real launcher and real bubblewrap.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdtempSync, rmSync } from "node:fs";
import { testUsers } from "../as-user.ts";
import { ownedDir, probeEnv, removeTempDirs, runProbe, tempBase } from "./probe.ts";

const ATTACK = [
  "grep CapEff /proc/self/status",
  "mount -o remount,bind,rw / 2>/dev/null && echo remount=ok || echo remount=refused",
  `touch "$BASE"/hostwrite 2>/dev/null && echo hostwrite=ok || echo hostwrite=refused`,
  "mkdir -p /dev/shm/r && mount --bind / /dev/shm/r 2>/dev/null && echo bind=ok || echo bind=refused",
  `cat /dev/shm/r"$DATA"/approver-token /dev/shm/r"$DATA"/api-token 2>/dev/null; cat "$DATA"/approver-token "$DATA"/api-token 2>/dev/null; echo end`,
].join("; ");

const hostDirs: string[] = [];
afterAll(() => {
  for (const d of hostDirs) rmSync(d, { recursive: true, force: true });
});

afterAll(removeTempDirs);

describe("confined processes hold no capabilities", () => {
  for (const policy of ["read-only", "workspace-write"] as const) {
    test(`${policy}: CapEff is 0 for every user; remount and bind mounts fail; the tokens stay unreadable`, async () => {
      const seen: Record<string, string> = {};
      for (const user of testUsers()) {
        const base = tempBase("airlock-caps-");
        const home = ownedDir(user, base, "home");
        const data = ownedDir(user, base, "data", { "approver-token": "APPROVER-SECRET\n", "api-token": "API-SECRET\n" });
        const ws = ownedDir(user, base, "ws");
        // a host folder outside /tmp (the sandbox's /tmp is private): writable by the user on the host, read-only inside
        const host = mkdtempSync("/var/tmp/airlock-caps-");
        chmodSync(host, 0o777);
        hostDirs.push(host);
        const r = await runProbe(user, { kind: "launch", policy, argv: ["sh", "-c", ATTACK.replaceAll("$DATA", data).replaceAll("$BASE", host)], cwd: ws, dataDir: data }, probeEnv(home));
        seen[user.name] = r.stdout;
        expect(existsSync(`${host}/hostwrite`)).toBe(false);
      }
      for (const [name, out] of Object.entries(seen)) {
        expect({ name, out }).toEqual({ name, out: "CapEff:\t0000000000000000\nremount=refused\nhostwrite=refused\nbind=refused\nend\n" });
      }
    }, 120_000);
  }
});
