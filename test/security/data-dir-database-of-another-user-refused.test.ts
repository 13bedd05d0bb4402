/**
 * @module test/security/data-dir-database-of-another-user-refused
 * A data dir once open to another user (refused since: SPEC §2 "Data dir") may hold an `airlock.db`, or a `-wal` /
 * `-shm` / `-journal` file beside it, that they put there; `chmod go-w DIR` leaves it theirs, and airlock cannot take
 * its mode bits off a file it does not own. They could go on rewriting it (trusted folders, session rules) or read
 * every conversation. Such a file is refused (`data_dir_unusable`, exit 2) by every command that opens the store.
 * Planting a file of another user needs root: these cases run only as root (as CI does).
 */
import { describe, expect, test } from "bun:test";
import { chmodSync, chownSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { removeAfterAllTests } from "../cleanup.ts";
import { IS_ROOT, NOBODY } from "../as-user.ts";

const MAIN = join(import.meta.dir, "..", "..", "src", "main.ts");

async function audit(data: string, home: string): Promise<{ code: number; stderr: string }> {
  const proc = Bun.spawn(["timeout", "-s", "KILL", "60", process.execPath, MAIN, "audit", "--data-dir", data], {
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: home, AIRLOCK_HOME: "" },
  });
  const [stderr, code] = await Promise.all([new Response(proc.stderr).text(), proc.exited]);
  return { code, stderr };
}

describe.skipIf(!IS_ROOT)("a database file of another user in root's data dir is refused", () => {
  for (const file of ["airlock.db", "airlock.db-wal", "airlock.db-journal"]) {
    test(`${file} of uid ${NOBODY} (mode 0666): \`airlock audit\` exits 2 data_dir_unusable`, async () => {
      const base = mkdtempSync(join(tmpdir(), "airlock-foreign-db-"));
      removeAfterAllTests(base);
      const data = join(base, "data");
      mkdirSync(data, { mode: 0o700 });
      writeFileSync(join(data, file), "");
      chownSync(join(data, file), NOBODY, NOBODY);
      chmodSync(join(data, file), 0o666);
      const r = await audit(data, base);
      expect(r.stderr).toContain("data_dir_unusable");
      expect(r.stderr).toContain(`belongs to uid ${NOBODY}`);
      expect(r.code).toBe(2);
    });
  }
  test("root's own database is used", async () => {
    const base = mkdtempSync(join(tmpdir(), "airlock-foreign-db-"));
    removeAfterAllTests(base);
    const data = join(base, "data");
    mkdirSync(data, { mode: 0o700 });
    const r = await audit(data, base);
    expect(r.code, r.stderr).toBe(0);
  });
});
