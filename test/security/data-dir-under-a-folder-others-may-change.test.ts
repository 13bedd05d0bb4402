/**
 * @module test/security/data-dir-under-a-folder-others-may-change
 * A data dir of this user with mode 0700 is still another user's to replace when a folder above it lets them rename
 * what is in it: one its group or others may write without the sticky bit (e.g. `~/.local/share` made 0777, or a
 * shared 0777 folder holding `--data-dir`), or one owned by another user than root or this one. They rename the data
 * dir away and put a folder of theirs (with an `airlock.yaml` of hooks) in its place between the check and any later
 * use. Such a data dir is refused like one others may write (`data_dir_unusable`, exit 2, nothing created), naming the
 * folder; `airlock doctor` fails its `data_dir` check for it and does not read its config. Root-owned sticky folders
 * (`/tmp`) and folders of this user or root that only their owner may write are fine.
 */
import { describe, expect, test } from "bun:test";
import { chmodSync, chownSync, mkdirSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { SHARED_GID, airlockAs, IS_ROOT, NOBODY, sharedTempDir, testUsers, type TestUser } from "../as-user.ts";


/** `path` made a folder owned by `uid` with `mode`. */
function folder(path: string, uid: number, mode: number): string {
  mkdirSync(path, { recursive: true });
  if (IS_ROOT) chownSync(path, uid, SHARED_GID); // a group that is no one's private group: its write bit means others
  chmodSync(path, mode);
  return path;
}

describe("a data dir under a folder another user may change is refused", () => {
  for (const user of testUsers()) {
    for (const mode of [0o777, 0o770]) {
      test(`as ${user.name}: --data-dir in this user's folder of mode 0${mode.toString(8)}: refused, nothing created`, async () => {
        const base = sharedTempDir("airlock-data-dir-parent-");
        const shared = folder(join(base, "shared"), user.uid, mode);
        const data = folder(join(shared, "data"), user.uid, 0o700);
        const home = folder(join(base, "home"), user.uid, 0o700);
        const r = await airlockAs(user, ["token", "--data-dir", data], { HOME: home });
        expect(r.stderr).toContain("data_dir_unusable");
        expect(r.stderr).toContain(shared);
        expect(r.code).toBe(2);
        expect(readdirSync(data)).toEqual([]);
      });
    }

    test(`as ${user.name}: the default data dir under a ~/.local/share of mode 0777: refused; doctor fails data_dir`, async () => {
      const base = sharedTempDir("airlock-data-dir-parent-");
      const home = folder(join(base, "home"), user.uid, 0o700);
      folder(join(home, ".local"), user.uid, 0o700);
      const share = folder(join(home, ".local", "share"), user.uid, 0o777);
      const r = await airlockAs(user, ["token"], { HOME: home });
      expect(r.stderr).toContain("data_dir_unusable");
      expect(r.stderr).toContain(share);
      expect(r.code).toBe(2);
      const d = await airlockAs(user, ["doctor", "--json"], { HOME: home });
      const checks = (JSON.parse(d.stdout) as { checks: { name: string; status: string; message: string }[] }).checks;
      expect(checks.find((c) => c.name === "data_dir")?.status).toBe("fail");
      expect(checks.find((c) => c.name === "data_dir")?.message).toContain(share);
    });

    test(`as ${user.name}: a data dir in this user's 0755 folder in a root-owned sticky 01777 folder is used`, async () => {
      const base = sharedTempDir("airlock-data-dir-parent-");
      chmodSync(base, 0o1777);
      const mine = folder(join(base, "mine"), user.uid, 0o755);
      const data = folder(join(mine, "data"), user.uid, 0o700);
      const home = folder(join(base, "home"), user.uid, 0o700);
      const r = await airlockAs(user, ["token", "--data-dir", data], { HOME: home });
      expect(r.code, r.stderr).toBe(0);
      expect(readdirSync(data).sort()).toEqual(["api-token", "approver-token"]);
    });
  }

  test.skipIf(!IS_ROOT)("as root: a data dir of root's in a 0755 folder of uid 65534: refused", async () => {
    const base = sharedTempDir("airlock-data-dir-parent-");
    chmodSync(base, 0o1777);
    const theirs = folder(join(base, "theirs"), NOBODY, 0o755);
    const data = folder(join(theirs, "data"), 0, 0o700);
    const r = await airlockAs(testUsers()[0]!, ["token", "--data-dir", data], { HOME: base });
    expect(r.stderr).toContain("data_dir_unusable");
    expect(r.stderr).toContain(`${theirs} belongs to uid ${NOBODY}`);
    expect(r.code).toBe(2);
  });
});
