/**
 * @module test/security/data-dir-link-retargeted-after-the-check
 * The data dir is checked (this user's, not writable by group or others: SPEC §2 "Data dir") and then used by its path
 * for as long as the process runs: the config right after, the tokens, the database, the sandbox's masks and the file
 * tools' floor at every call. When that path is a symbolic link another user may change (one they own, or one in a
 * folder they may write, e.g. `AIRLOCK_HOME=/srv/shared/airlock-link` pointing at this user's 0700 folder), they
 * could aim it at a folder of theirs once the check passed: this user's airlock would then read their `airlock.yaml`
 * (hooks, MCP servers: commands run as this user). `resolveDataDir` now returns the real path it checked, so every
 * later use is of that folder, wherever the link points afterwards. The retarget is done by the child between the two
 * calls, where another user's loop would win the race (an attacker needs no timing: it may flip the link forever).
 */
import { describe, expect, test } from "bun:test";
import { chmodSync, chownSync, lchownSync, mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { IS_ROOT, NOBODY, sharedTempDir, testUsers } from "../as-user.ts";

const SRC = join(import.meta.dir, "..", "..", "src");

describe("a data dir reached through a link is used as the folder that was checked", () => {
  for (const user of testUsers()) {
    test(`as ${user.name}: the link retargeted after resolveDataDir does not change the config read`, async () => {
      const base = sharedTempDir("airlock-data-dir-link-");
      const mine = join(base, "mine");
      const theirs = join(base, "theirs");
      const link = join(base, "link");
      mkdirSync(mine, { mode: 0o700 });
      writeFileSync(join(mine, "airlock.yaml"), "sandbox: read-only\n");
      chmodSync(join(mine, "airlock.yaml"), 0o600);
      if (IS_ROOT) chownSync(join(mine, "airlock.yaml"), user.uid, user.uid);
      if (IS_ROOT) chownSync(mine, user.uid, user.uid);
      chmodSync(mine, 0o700);
      mkdirSync(theirs, { mode: 0o755 });
      writeFileSync(join(theirs, "airlock.yaml"), "sandbox: danger-full-access\n");
      chmodSync(join(theirs, "airlock.yaml"), 0o644);
      if (IS_ROOT) chownSync(theirs, user.uid === 0 ? NOBODY : 0, user.uid === 0 ? NOBODY : 0);
      symlinkSync(mine, link);
      // the child plays the other user who may change the link (its owner, here)
      if (IS_ROOT) lchownSync(link, user.uid, user.uid);
      const script = join(base, "child.ts");
      writeFileSync(
        script,
        `
import { renameSync, symlinkSync } from "node:fs";
import { resolveDataDir } from ${JSON.stringify(join(SRC, "config", "paths.ts"))};
import { loadConfig } from ${JSON.stringify(join(SRC, "config", "load.ts"))};
const dataDir = resolveDataDir({ flag: ${JSON.stringify(link)}, env: {} });
// the other user's move, after the check
symlinkSync(${JSON.stringify(theirs)}, ${JSON.stringify(link + ".new")});
renameSync(${JSON.stringify(link + ".new")}, ${JSON.stringify(link)});
const loaded = loadConfig({ dataDir });
process.stdout.write(JSON.stringify({ dataDir, sandbox: loaded.config.sandbox }));
`,
      );
      chmodSync(script, 0o644);
      const proc = Bun.spawn([...user.prefix, "timeout", "-s", "KILL", "60", process.execPath, script], { stdout: "pipe", stderr: "pipe", stdin: "ignore", cwd: base });
      const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
      expect(code, err).toBe(0);
      const r = JSON.parse(out) as { dataDir: string; sandbox: string };
      expect(r.sandbox).toBe("read-only");
      expect(r.dataDir).toBe(mine);
    }, 120_000);
  }
});
