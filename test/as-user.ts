/**
 * @module test/as-user
 * Runs a test body once as the current user and once as an unprivileged one (`nobody`, uid 65534),
 * so a wall is proven both where airlock runs as root (containers, CI) and where it does not.
 * Dropping privileges uses util-linux `setpriv`; when the tests already run unprivileged the second
 * pass is skipped and says so (the first pass is then the unprivileged one).
 */
import { expect } from "bun:test";
import { accessSync, chmodSync, chownSync, constants, mkdtempSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { removeAfterAllTests } from "./cleanup.ts";

/** The uid and gid of the unprivileged user (Debian's `nobody` / `nogroup`). */
export const NOBODY = 65534;

/** A user a test can run airlock as. `prefix` goes before the command's argv (empty for the current user). */
export interface TestUser {
  /** `"root"` or `"nobody"` (or `"self"` when the tests do not run as root). */
  name: string;
  uid: number;
  /** argv prefix that runs a command as this user, e.g. `["setpriv", "--reuid=65534", …, "--"]`. */
  prefix: string[];
}

/** True when the test process runs as root. */
export const IS_ROOT = process.getuid?.() === 0;

/** The users each security test runs as: root and nobody when the tests run as root, else only the current user. */
export function testUsers(): TestUser[] {
  if (!IS_ROOT) return [{ name: "self", uid: process.getuid?.() ?? -1, prefix: [] }];
  return [
    { name: "root", uid: 0, prefix: [] },
    {
      name: "nobody",
      uid: NOBODY,
      prefix: ["setpriv", `--reuid=${NOBODY}`, `--regid=${NOBODY}`, "--clear-groups", "--inh-caps=-all", "--"],
    },
  ];
}

/**
 * A folder on a RAM-backed file system (`/dev/shm`, tmpfs) when there is a world-writable one, else
 * `tmpdir()`. For tests whose set-up makes and removes ~10^5 folders: on this disk (ext4 mounted with
 * `discard`) making 100,000 folders took ~50 s and removing them ~190 s at load ~12, on tmpfs 2.6 s and 4.8 s;
 * what airlock does with them (lstat, readdir, rename) is the same on both.
 */
export function ramTempParent(): string {
  try {
    const st = statSync("/dev/shm");
    accessSync("/dev/shm", constants.W_OK | constants.X_OK);
    // sticky and world-writable, as /tmp: every test user can make its folder there
    if (st.isDirectory() && (st.mode & 0o1777) === 0o1777) return "/dev/shm";
  } catch {
    // no /dev/shm: the disk, only slower
  }
  return tmpdir();
}

/**
 * A fresh temp directory every test user may read, write and enter (mode 01777 on the directory
 * itself, sticky as `/tmp`: each user may rename or remove only its own entries, so a data dir made in it is not
 * another user's to replace, which airlock refuses: SPEC §2 "Data dir"; its parent, `/tmp` or `parent`, is
 * world-writable already). Removed after the last test of the run (test/cleanup.ts).
 */
export function sharedTempDir(prefix = "airlock-user-", parent = tmpdir()): string {
  const dir = mkdtempSync(join(parent, prefix));
  chmodSync(dir, 0o1777);
  removeAfterAllTests(dir);
  return dir;
}

/**
 * Makes `dir` (an existing folder, e.g. made 0777 inside a {@link sharedTempDir}) a data dir `user` may use: owned by
 * `user`, mode 0700. airlock refuses a data dir of another user, or one its group or others may write (SPEC §2
 * "Data dir"). Files already in it keep their owner (a config root wrote stays readable where its mode allows).
 */
export function dataDirFor(dir: string, user: TestUser): string {
  if (IS_ROOT) chownSync(dir, user.uid, user.uid);
  chmodSync(dir, 0o700);
  return dir;
}

/**
 * Runs airlock from source (`bun src/main.ts ARGS`) as `user`, stdin closed, with `env` over `PATH` and an empty
 * `AIRLOCK_HOME`. SIGKILLed after 60 s, and a run a signal ended fails the test, so a hang cannot pass.
 * @returns its exit code, stdout and stderr.
 */
export async function airlockAs(user: TestUser, args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  const proc = Bun.spawn([...user.prefix, process.execPath, join(import.meta.dir, "..", "src", "main.ts"), ...args], {
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", AIRLOCK_HOME: "", ...env },
  });
  const guard = setTimeout(() => proc.kill("SIGKILL"), 60_000);
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  clearTimeout(guard);
  expect(proc.signalCode).toBeNull();
  return { code, stdout, stderr };
}

/**
 * A group id that is no one's private group: Debian's `nogroup`, the primary group of several system accounts (`sync`,
 * `_apt`, `nobody`). A test that needs "writable by its group" to mean others (config/paths.ts `writersBesidesOwner`)
 * gives its file this group (needs root; a user's own group may be private under Debian's user-private-group scheme).
 */
export const SHARED_GID = 65534;
