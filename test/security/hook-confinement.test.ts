/**
 * @module test/security/hook-confinement.test
 * PreToolUse hooks used to run unconfined (`/bin/sh -c` straight from airlock): as root they held
 * every capability, and as any user they read airlock's data dir (both tokens, the database) and
 * airlock's own environment through /proc. Now a hook keeps the network and ordinary file access,
 * reads its config dir, but holds no capabilities, has its own PID namespace and sees the data dir's
 * secrets as empty. Run as root and as nobody, through the real hook runner and real bubblewrap.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { testUsers } from "../as-user.ts";
import { ownedDir, probeEnv, removeTempDirs, runProbe, tempBase } from "./probe.ts";

afterAll(removeTempDirs);

describe("hooks run confined", () => {
  test("a hook reads its config dir and writes the workspace, but gets no capabilities, no token, no database and no view of airlock's environment", async () => {
    const seen: Record<string, string> = {};
    for (const user of testUsers()) {
      const base = tempBase("airlock-hook-");
      const home = ownedDir(user, base, "home");
      // the data dir is also the config dir (airlock.yaml beside the tokens), as it often is
      const data = ownedDir(user, base, "data", {
        "airlock.yaml": "mode: smart\n",
        "approver-token": "APPROVER-SECRET\n",
        "api-token": "API-SECRET\n",
        "airlock.db": "DB-CONTENT\n",
        "airlock.db-wal": "WAL-CONTENT\n",
        "airlock.db-shm": "SHM-CONTENT\n",
      });
      const ws = ownedDir(user, base, "ws");
      const hook = [
        `D=${data}`,
        "grep CapEff /proc/self/status",
        'cat "$D/approver-token" "$D/api-token" "$D/airlock.db" "$D/airlock.db-wal" "$D/airlock.db-shm" 2>/dev/null',
        "echo secrets-end",
        'cat "$D/airlock.yaml"',
        "echo environ-hits=$(grep -l sk-airlock-own-key /proc/[0-9]*/environ 2>/dev/null | wc -l)",
        "mount -o remount,rw / 2>/dev/null && echo remount=ok || echo remount=refused",
      ].join("; ");
      const verdict = await runProbe(
        user,
        { kind: "hook", command: `{ ${hook}; } > ${join(ws, "seen.txt")}`, cwd: ws, dataDir: data },
        probeEnv(home, { AIRLOCK_OWN_PROVIDER_KEY: "sk-airlock-own-key" }),
      );
      expect(verdict).toEqual({ kind: "allow", inspector: "hook" });
      seen[user.name] = readFileSync(join(ws, "seen.txt"), "utf8");
    }
    for (const [name, out] of Object.entries(seen)) {
      expect({ name, out }).toEqual({ name, out: "CapEff:\t0000000000000000\nsecrets-end\nmode: smart\nenviron-hits=0\nremount=refused\n" });
    }
  }, 120_000);
});
