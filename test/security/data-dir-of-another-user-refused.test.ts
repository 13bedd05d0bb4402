/**
 * @module test/security/data-dir-of-another-user-refused
 * A data dir another user can change is never used (SPEC §2 "Data dir"). Its owner, or anyone who may create files
 * in it, could put an `airlock.yaml` there with hooks of their own (commands run as the user airlock runs as), or
 * replace `airlock.db` with one that trusts their folders; the token checks alone do not cover that. Every command
 * that resolves the data dir refuses it with `data_dir_unusable` (exit 2) and creates nothing in it, and
 * `airlock doctor` fails its `data_dir` check, naming why. Planting a folder for another user needs root: those
 * cases run only as root (as CI does); the writable-by-others cases run as each test user.
 */
import { describe, expect, test } from "bun:test";
import { chmodSync, chownSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { SHARED_GID, airlockAs, IS_ROOT, NOBODY, sharedTempDir, testUsers, type TestUser } from "../as-user.ts";


/** Runs `bun src/main.ts ARGS` as `user` with stdin closed; killed (and failed) after 60 s so a hang cannot pass. */
/** An empty data dir owned by `owner` with `mode`, in a folder every test user can enter; and a HOME of `user`'s. */
function dataDir(user: TestUser, owner: number, mode: number): { data: string; home: string } {
  const base = sharedTempDir("airlock-foreign-data-dir-");
  const data = join(base, "data");
  const home = join(base, "home");
  mkdirSync(data);
  mkdirSync(home, { mode: 0o700 });
  chownSync(data, owner, IS_ROOT ? SHARED_GID : process.getgid!()); // as root a group that is no one's private group: its write bit means others
  chmodSync(data, mode);
  chownSync(home, user.uid, user.uid);
  return { data, home };
}

function dataDirCheck(stdout: string): { status: string; message: string } | undefined {
  return (JSON.parse(stdout) as { checks: { name: string; status: string; message: string }[] }).checks.find((c) => c.name === "data_dir");
}

describe.skipIf(!IS_ROOT)("a data dir owned by another user is refused (needs root to plant it)", () => {
  for (const user of testUsers()) {
    const other = user.uid === 0 ? NOBODY : 0;
    test(`as ${user.name}: \`airlock token\` refuses a data dir of uid ${other} (mode 0777), and creates nothing in it`, async () => {
      // 0777 so that, without the check, this user could create its tokens there
      const { data, home } = dataDir(user, other, 0o777);
      const r = await airlockAs(user, ["token", "--data-dir", data], { HOME: home });
      expect(r.stderr).toContain(`belongs to uid ${other}, not to the user airlock runs as (uid ${user.uid})`);
      expect(r.stderr).toContain("data_dir_unusable");
      expect(r.code).toBe(2);
      expect(readdirSync(data)).toEqual([]);
    });

    test(`as ${user.name}: \`airlock doctor\` fails its data_dir check for a data dir of uid ${other}`, async () => {
      const { data, home } = dataDir(user, other, 0o755);
      const r = await airlockAs(user, ["doctor", "--json", "--data-dir", data], { HOME: home });
      const check = dataDirCheck(r.stdout);
      expect(check?.status).toBe("fail");
      expect(check?.message).toContain(`belongs to uid ${other}`);
    });
  }
});

describe("a data dir others may write is refused", () => {
  for (const user of testUsers()) {
    for (const mode of [0o777, 0o1777, 0o770]) {
      test(`as ${user.name}: \`airlock token\` refuses this user's data dir with mode 0${mode.toString(8)}, and creates nothing in it`, async () => {
        const { data, home } = dataDir(user, user.uid, mode);
        const r = await airlockAs(user, ["token", "--data-dir", data], { HOME: home });
        expect(r.stderr).toContain(`is writable by ${mode === 0o770 ? "its group" : "its group and other users"} (mode 0${mode.toString(8)})`);
        expect(r.stderr).toContain("data_dir_unusable");
        expect(r.stderr).toContain("chmod go-w");
        expect(r.code).toBe(2);
        expect(readdirSync(data)).toEqual([]);
      });
    }
    test(`as ${user.name}: \`airlock doctor\` fails its data_dir check for a data dir with mode 01777`, async () => {
      const { data, home } = dataDir(user, user.uid, 0o1777);
      const r = await airlockAs(user, ["doctor", "--json", "--data-dir", data], { HOME: home });
      const check = dataDirCheck(r.stdout);
      expect(check?.status).toBe("fail");
      expect(check?.message).toContain("is writable by its group and other users (mode 01777)");
    });
    test(`as ${user.name}: this user's data dir with mode 0700 is used`, async () => {
      const { data, home } = dataDir(user, user.uid, 0o700);
      const r = await airlockAs(user, ["token", "--data-dir", data], { HOME: home });
      expect(r.code).toBe(0);
      expect(readdirSync(data).sort()).toEqual(["api-token", "approver-token"]);
    });
  }
});

/**
 * Debian's user-private-group scheme (umask 002): a user's files are group-writable, the group being the user's own.
 * Group write by a group no one else is in (gid = the owner's uid, no members in /etc/group, no other account's
 * primary group) is not "others": such a data dir and its airlock.yaml are used. Root's group 0 is one here.
 */
describe.skipIf(!IS_ROOT)("group write by the owner's private group is not others", () => {
  test("as root: a data dir of mode 0770 and an airlock.yaml of mode 0664, both root:root, are used", async () => {
    const { data, home } = dataDir(testUsers()[0]!, 0, 0o770);
    chownSync(data, 0, 0);
    writeFileSync(join(data, "airlock.yaml"), "mode: chat\n", { mode: 0o664 });
    chmodSync(join(data, "airlock.yaml"), 0o664);
    const r = await airlockAs(testUsers()[0]!, ["token", "--data-dir", data], { HOME: home });
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const doctor = await airlockAs(testUsers()[0]!, ["doctor", "--json", "--data-dir", data], { HOME: home });
    // a warning that its group may look inside (mode 0770), not the refusal
    expect(dataDirCheck(doctor.stdout)).toMatchObject({ status: "warn", message: expect.not.stringContaining("writable") });
  });
});
