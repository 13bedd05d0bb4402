/**
 * @module test/security/credentials-under-account-home.test
 * The credential list is hidden under airlock's HOME, but HOME need not be the account's home: a CI
 * job or a service sets another one, or none (systemd). The credential stores under the home in the
 * password database (`~root/.ssh` when airlock runs as root) then stayed readable to confined
 * processes, while the floor judged reads against `os.homedir()`. Now both homes are hidden. The test
 * counts entries only (it prints no file); it runs where the account's home holds one of the listed
 * credential folders (skipped otherwise), through the real launcher and bubblewrap, for every user.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { testUsers } from "../as-user.ts";
import { CREDENTIAL_DIRS, CREDENTIAL_FILES } from "../../src/launcher/credentials.ts";
import { ownedDir, probeEnv, removeTempDirs, runProbe, tempBase } from "./probe.ts";

afterAll(removeTempDirs);

/**
 * The account's home from the password database, and a non-empty credential folder or file in it (or
 * null), with the shell command that prints how much of it a process sees (entries or bytes: never content).
 */
function accountStore(uid: number): { path: string; measure: string } | null {
  const line = Bun.spawnSync(["getent", "passwd", String(uid)], { stdout: "pipe" }).stdout.toString().trim();
  const home = line.split(":")[5];
  if (!home) return null;
  for (const rel of CREDENTIAL_DIRS) {
    const dir = join(home, rel);
    try {
      if (statSync(dir).isDirectory() && readdirSync(dir).length > 0) return { path: dir, measure: `ls -A ${dir} 2>/dev/null | wc -l` };
    } catch {
      // absent or unreadable: try the next
    }
  }
  for (const rel of CREDENTIAL_FILES) {
    const file = join(home, rel);
    try {
      if (statSync(file).isFile() && statSync(file).size > 0) return { path: file, measure: `wc -c < ${file} 2>/dev/null || echo 0` };
    } catch {
      // absent or unreadable: try the next
    }
  }
  return null;
}

const users = testUsers().filter((u) => accountStore(u.uid) !== null);

describe("credential stores under the account's home are hidden whatever HOME says", () => {
  test.skipIf(users.length === 0)("with HOME set elsewhere, a confined process sees the account home's credential folder or file empty, for every user that has one", async () => {
    const seen: Record<string, string> = {};
    for (const user of users) {
      const store = accountStore(user.uid)!;
      const base = tempBase("airlock-account-home-");
      const home = ownedDir(user, base, "home");
      const ws = ownedDir(user, base, "ws");
      for (const policy of ["read-only", "workspace-write"] as const) {
        const r = await runProbe(user, { kind: "launch", policy, argv: ["sh", "-c", store.measure], cwd: ws }, probeEnv(home));
        seen[`${policy} as ${user.name}`] = String(r.stdout).trim();
      }
    }
    expect(Object.entries(seen).filter(([, n]) => n !== "0")).toEqual([]);
  }, 120_000);
});
