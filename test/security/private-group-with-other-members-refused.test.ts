/**
 * A data dir airlock's owner's private group may write is used only when that group is truly private
 * (config/paths.ts `writersBesidesOwner`). These tests run airlock in a bubblewrap mount namespace whose /etc/group
 * and /etc/passwd are the test's, so the group databases an attacker (or an odd admin) could produce are real:
 * a second /etc/group line with the same gid and members, a comment line before the real one, a NIS `+` line.
 * Each must count the group's write bit as others (fail closed). Needs root (bwrap and chown).
 */
import { describe, expect, test } from "bun:test";
import { chmodSync, chownSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { airlockAs, IS_ROOT, sharedTempDir, testUsers, type TestUser } from "../as-user.ts";

const PASSWD = "root:x:0:0:root:/root:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\nbob:x:1001:1001::/home/bob:/bin/sh\n";

/** `user` run inside a mount namespace whose /etc/group is `group` and /etc/passwd is {@link PASSWD}. */
function withDatabases(user: TestUser, group: string): TestUser {
  const base = sharedTempDir("airlock-private-group-db-");
  writeFileSync(join(base, "group"), group, { mode: 0o644 });
  writeFileSync(join(base, "passwd"), PASSWD, { mode: 0o644 });
  chmodSync(join(base, "group"), 0o644);
  chmodSync(join(base, "passwd"), 0o644);
  const bwrap = ["bwrap", "--bind", "/", "/", "--ro-bind", join(base, "group"), "/etc/group", "--ro-bind", join(base, "passwd"), "/etc/passwd", "--"];
  return { ...user, prefix: [...bwrap, ...user.prefix] };
}

/** A data dir of mode 0770 owned by `user` and its same-numbered group, and a HOME. */
function groupWritableDataDir(user: TestUser): { data: string; home: string } {
  const base = sharedTempDir("airlock-private-group-");
  const data = join(base, "data");
  const home = join(base, "home");
  mkdirSync(data);
  mkdirSync(home, { mode: 0o700 });
  chownSync(data, user.uid, user.uid);
  chmodSync(data, 0o770);
  chownSync(home, user.uid, user.uid);
  return { data, home };
}

/** /etc/group texts in which `gid` (the owner's private-looking group) has a member besides its owner. */
function sharedGroups(gid: number): Record<string, string> {
  const own = gid === 0 ? "root" : "nogroup";
  return {
    "a second line with the same gid and a member": `${own}:x:${gid}:\nbobs:x:${gid}:bob\n`,
    "a comment line before the line with a member": `#${own}:x:${gid}:\n${own}:x:${gid}:bob\n`,
    "a NIS + line (members known only to NIS)": `${own}:x:${gid}:\n+:::\n`,
  };
}

describe.skipIf(!IS_ROOT)("a private-looking group with other members is others", () => {
  for (const user of testUsers()) {
    for (const [name, group] of Object.entries(sharedGroups(user.uid))) {
      test(`as ${user.name}: ${name}: a data dir of mode 0770 is refused`, async () => {
        const { data, home } = groupWritableDataDir(user);
        const r = await airlockAs(withDatabases(user, group), ["token", "--data-dir", data], { HOME: home });
        expect(r.stderr).toContain("is writable by its group (mode 0770)");
        expect(r.stderr).toContain("data_dir_unusable");
        expect(r.code).toBe(2);
        expect(readdirSync(data)).toEqual([]);
      });
    }
    test(`as ${user.name}: a group with no members, alone with its gid, is still private (0770 used)`, async () => {
      const { data, home } = groupWritableDataDir(user);
      const own = user.uid === 0 ? "root" : "nogroup";
      const r = await airlockAs(withDatabases(user, `${own}:x:${user.uid}:\r\nbobs:x:1001:bob\n`), ["token", "--data-dir", data], { HOME: home });
      expect(r.stderr).toBe("");
      expect(r.code).toBe(0);
    });
  }
});
