/**
 * @module test/security/data-dir-config-of-another-user-refused
 * The data dir's own `airlock.yaml` chooses hooks and MCP servers: commands run as the user airlock runs as. A data
 * dir that others could write is refused (SPEC §2 "Data dir"), and the fix it names is `chmod go-w DIR`; but a file
 * another user put there while they could (owned by them, or left writable by group or others) stays, and its owner
 * could go on rewriting it (chmod it back, or write it through its mode) once the folder is locked. So that file is
 * read only when it belongs to this user or root and its group and others may not write it; otherwise
 * `config_invalid` naming the owner or mode. A `--config` file is the user's own choice and is not checked so.
 */
import { describe, expect, test } from "bun:test";
import { chmodSync, chownSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { SHARED_GID, IS_ROOT, NOBODY, sharedTempDir, testUsers, type TestUser } from "../as-user.ts";

const MAIN = join(import.meta.dir, "..", "..", "src", "main.ts");

async function doctorConfig(user: TestUser, data: string, home: string): Promise<{ status: string; message: string } | undefined> {
  const proc = Bun.spawn([...user.prefix, process.execPath, MAIN, "doctor", "--json", "--data-dir", data], {
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: home, AIRLOCK_HOME: "" },
  });
  const guard = setTimeout(() => proc.kill("SIGKILL"), 60_000);
  const [stdout] = await Promise.all([new Response(proc.stdout).text(), proc.exited]);
  clearTimeout(guard);
  return (JSON.parse(stdout) as { checks: { name: string; status: string; message: string }[] }).checks.find((c) => c.name === "config");
}

/** This user's 0700 data dir holding an `airlock.yaml` owned by `owner` with `mode`. */
function setup(user: TestUser, owner: number, mode: number): { data: string; home: string } {
  const base = sharedTempDir("airlock-config-owner-");
  const data = join(base, "data");
  const home = join(base, "home");
  mkdirSync(data, { mode: 0o700 });
  mkdirSync(home, { mode: 0o700 });
  writeFileSync(join(data, "airlock.yaml"), "mode: chat\n");
  if (IS_ROOT) chownSync(join(data, "airlock.yaml"), owner, SHARED_GID); // no one's private group: its write bit means others
  chmodSync(join(data, "airlock.yaml"), mode);
  if (IS_ROOT) {
    chownSync(data, user.uid, user.uid);
    chownSync(home, user.uid, user.uid);
  }
  return { data, home };
}

describe("the data dir's airlock.yaml is read only when no other user may change it", () => {
  for (const user of testUsers()) {
    for (const mode of [0o666, 0o620]) {
      test(`as ${user.name}: this user's airlock.yaml with mode 0${mode.toString(8)} is refused`, async () => {
        const { data, home } = setup(user, user.uid, mode);
        const c = await doctorConfig(user, data, home);
        expect(c?.status).toBe("fail");
        expect(c?.message).toContain(`mode 0${mode.toString(8)}`);
      });
    }
    test(`as ${user.name}: this user's airlock.yaml with mode 0644 is read`, async () => {
      const { data, home } = setup(user, user.uid, 0o644);
      expect((await doctorConfig(user, data, home))?.status).toBe("ok");
    });
  }
  test.skipIf(!IS_ROOT)("as root: an airlock.yaml of uid 65534 (mode 0644) in root's data dir is refused", async () => {
    const root = testUsers()[0]!;
    const { data, home } = setup(root, NOBODY, 0o644);
    const c = await doctorConfig(root, data, home);
    expect(c?.status).toBe("fail");
    expect(c?.message).toContain(`belongs to uid ${NOBODY}`);
  });
  test.skipIf(!IS_ROOT)("as nobody: an airlock.yaml of root's (mode 0644) in nobody's data dir is read (root may change anything)", async () => {
    const nobody = testUsers()[1]!;
    const { data, home } = setup(nobody, 0, 0o644);
    expect((await doctorConfig(nobody, data, home))?.status).toBe("ok");
  });
});
