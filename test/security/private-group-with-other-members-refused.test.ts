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
function withDatabases(user: TestUser, group: string, gshadow = "root:*::\nnogroup:*::\n", nsswitch = "passwd: files systemd\ngroup: files systemd\n"): TestUser {
  const base = sharedTempDir("airlock-private-group-db-");
  writeFileSync(join(base, "nsswitch.conf"), nsswitch, { mode: 0o644 });
  chmodSync(join(base, "nsswitch.conf"), 0o644);
  writeFileSync(join(base, "gshadow"), gshadow, { mode: 0o640 });
  chmodSync(join(base, "gshadow"), 0o640); // root's only, as Debian's root:shadow 0640
  writeFileSync(join(base, "group"), group, { mode: 0o644 });
  writeFileSync(join(base, "passwd"), PASSWD, { mode: 0o644 });
  chmodSync(join(base, "group"), 0o644);
  chmodSync(join(base, "passwd"), 0o644);
  const bwrap = ["bwrap", "--bind", "/", "/", "--ro-bind", join(base, "group"), "/etc/group", "--ro-bind", join(base, "passwd"), "/etc/passwd", "--ro-bind", join(base, "gshadow"), "/etc/gshadow", "--ro-bind", join(base, "nsswitch.conf"), "/etc/nsswitch.conf", "--"];
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

/** /etc/group (and /etc/gshadow) texts in which `gid` (the owner's private-looking group) lets in another user. */
function sharedGroups(gid: number): Record<string, [string, string?, string?]> {
  const own = gid === 0 ? "root" : "nogroup";
  const cases: Record<string, [string, string?, string?]> = {
    "groups also from LDAP in nsswitch.conf (its members of the gid are not in /etc/group)": [`${own}:x:${gid}:\n`, undefined, "group: files ldap\n"],
    "initgroups from sss in nsswitch.conf": [`${own}:x:${gid}:\n`, undefined, "group: files [SUCCESS=merge] systemd\ninitgroups: files sss\n"],
    "a second line with the same gid and a member": [`${own}:x:${gid}:\nbobs:x:${gid}:bob\n`],
    "a comment line before the line with a member": [`#${own}:x:${gid}:\n${own}:x:${gid}:bob\n`],
    "a NIS + line (members known only to NIS)": [`${own}:x:${gid}:\n+:::\n`],
    "a group password in /etc/group (newgrp lets in whoever knows it)": [`${own}:$6$salt$hash:${gid}:\n`],
  };
  // /etc/gshadow is root's to read: as nobody airlock takes /etc/group's word
  if (gid === 0) {
    cases["a member in /etc/gshadow (newgrp takes gshadow's members)"] = [`${own}:x:${gid}:\n`, `${own}:*::bob\n`];
    cases["an admin in /etc/gshadow (who may add anyone)"] = [`${own}:x:${gid}:\n`, `${own}:*:bob:\n`];
    cases["a group password in /etc/gshadow"] = [`${own}:x:${gid}:\n`, `${own}:$6$salt$hash::\n`];
  }
  return cases;
}


describe.skipIf(!IS_ROOT)("a private-looking group with other members is others", () => {
  for (const user of testUsers()) {
    for (const [name, [group, gshadow, nsswitch]] of Object.entries(sharedGroups(user.uid))) {
      test(`as ${user.name}: ${name}: a data dir of mode 0770 is refused`, async () => {
        const { data, home } = groupWritableDataDir(user);
        const r = await airlockAs(withDatabases(user, group, gshadow, nsswitch), ["token", "--data-dir", data], { HOME: home });
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
