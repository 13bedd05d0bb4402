/**
 * @module test/security/tokens-of-another-user-refused
 * A token file airlock did not make for this user is never taken as this user's token (SPEC §2 "Data dir").
 * Whoever owns a token file can read it: in a data dir another user can write (a shared or group folder, a data
 * dir a lower-privileged user prepared for `sudo airlock`), a token planted there would let its owner answer the
 * cards of the user airlock runs as (`X-Airlock-Approver`) or call its API. So `ensureTokens` (every command
 * that reads the tokens), the early request's cache key and `airlock doctor` refuse a token owned by another
 * uid, also one reached through a symbolic link, and a FIFO put where a token is expected never blocks a command.
 * Planting a file for another user needs root: those cases run only as root (as CI does), each as both users.
 */
import { describe, expect, test } from "bun:test";
import { chmodSync, chownSync, linkSync, mkdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { airlockAs, IS_ROOT, NOBODY, sharedTempDir, testUsers, type TestUser } from "../as-user.ts";
import { configCacheKey } from "../../src/cli/early-request.ts";

const PLANTED = "ab".repeat(32);

/** Runs `bun src/main.ts ARGS` as `user` with stdin closed; killed (and failed) after 60 s so a hang cannot pass. */
/** A data dir owned by `user`, mode 0700, in a folder every test user can enter; and a HOME for it. */
function dataDirOf(user: TestUser): { data: string; home: string } {
  const base = sharedTempDir("airlock-foreign-token-");
  const data = join(base, "data");
  const home = join(base, "home");
  mkdirSync(data, { mode: 0o700 });
  mkdirSync(home, { mode: 0o700 });
  chownSync(data, user.uid, user.uid);
  chownSync(home, user.uid, user.uid);
  return { data, home };
}

/** The uid that is not `user`'s: nobody for root, root for nobody. */
const otherUid = (user: TestUser): number => (user.uid === 0 ? NOBODY : 0);

describe.skipIf(!IS_ROOT)("a token file owned by another user is refused (needs root to plant it)", () => {
  for (const user of testUsers()) {
    for (const file of ["approver-token", "api-token"] as const) {
      test(`as ${user.name}: \`airlock token\` refuses ${file} owned by uid ${otherUid(user)}, and leaves it as it was`, async () => {
        const { data, home } = dataDirOf(user);
        const planted = join(data, file);
        writeFileSync(planted, `${PLANTED}\n`, { mode: 0o600 });
        chownSync(planted, otherUid(user), otherUid(user));
        // readable by the user airlock runs as, so without the owner check it would be taken as the token
        chmodSync(planted, 0o644);
        const r = await airlockAs(user, ["token", "--data-dir", data], { HOME: home });
        expect(r.code).toBe(2);
        expect(r.stderr).toContain(`belongs to uid ${otherUid(user)}, not to the user airlock runs as (uid ${user.uid})`);
        expect(r.stderr).toContain("config_invalid");
        expect(r.stdout).not.toContain("API token:");
        expect(readFileSync(planted, "utf8")).toBe(`${PLANTED}\n`);
      });
    }

    test(`as ${user.name}: a symbolic link to another user's file is refused as the approver token`, async () => {
      const { data, home } = dataDirOf(user);
      const target = join(sharedTempDir("airlock-foreign-target-"), "token");
      writeFileSync(target, `${PLANTED}\n`, { mode: 0o644 });
      chownSync(target, otherUid(user), otherUid(user));
      symlinkSync(target, join(data, "approver-token"));
      const r = await airlockAs(user, ["token", "--data-dir", data], { HOME: home });
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(`belongs to uid ${otherUid(user)}`);
    });

    test(`as ${user.name}: \`airlock doctor\` fails its tokens check for a token another user owns`, async () => {
      const { data, home } = dataDirOf(user);
      for (const f of ["api-token", "approver-token"]) {
        writeFileSync(join(data, f), `${PLANTED}\n`, { mode: 0o600 });
        chownSync(join(data, f), user.uid, user.uid);
      }
      chownSync(join(data, "approver-token"), otherUid(user), otherUid(user));
      const r = await airlockAs(user, ["doctor", "--json", "--data-dir", data], { HOME: home });
      const tokens = (JSON.parse(r.stdout) as { checks: { name: string; status: string; message: string }[] }).checks.find((c) => c.name === "tokens");
      expect(tokens?.status).toBe("fail");
      expect(tokens?.message).toContain(`approver-token (uid ${otherUid(user)})`);
    });
  }

  test("the early request's cache key is not computed under another user's approver token", () => {
    const { data } = dataDirOf(testUsers()[0]!);
    const token = join(data, "approver-token");
    writeFileSync(token, `${PLANTED}\n`, { mode: 0o600 });
    const env = { HOME: data, AIRLOCK_HOME: data };
    // this user's token: a key (the control)
    expect(configCacheKey({}, env)?.key).toMatch(/^[0-9a-f]{64}$/);
    chownSync(token, NOBODY, NOBODY);
    expect(configCacheKey({}, env)).toBeUndefined();
  });
});

describe("a FIFO where a token is expected never blocks a command", () => {
  for (const user of testUsers()) {
    test(`as ${user.name}: \`airlock token\` with a FIFO at approver-token is refused at once`, async () => {
      const { data, home } = IS_ROOT ? dataDirOf(user) : { data: join(sharedTempDir(), "data"), home: sharedTempDir() };
      mkdirSync(data, { recursive: true, mode: 0o700 });
      const fifo = Bun.spawnSync(["mkfifo", "-m", "600", join(data, "approver-token")]);
      expect(fifo.exitCode).toBe(0);
      if (IS_ROOT) chownSync(join(data, "approver-token"), user.uid, user.uid);
      const r = await airlockAs(user, ["token", "--data-dir", data], { HOME: home });
      expect(r.code).toBe(2);
      expect(r.stderr).toContain("is not a regular file");
    });
  }
});

/**
 * A link at a token's place to a file of this user that others can read: whoever could write the data dir (the
 * case the owner check is for: another user's folder, a data dir a lower-privileged user prepared for `sudo
 * airlock`) picks a file whose contents they know — as root, any 0644 root-owned file such as `/etc/hostname`.
 * It was taken as the token (and the target "tightened" to 0600: as root, a link to `/etc/passwd` had airlock
 * chmod it); now it is refused and the target is left as it was. A plain file of the data dir is still tightened.
 */
describe("a token reached through a link to a file others can read is refused, and the target is left alone", () => {
  for (const user of testUsers()) {
    for (const kind of ["symbolic", "hard"] as const) {
      for (const file of ["approver-token", "api-token"] as const) {
        test(`as ${user.name}: ${file} as a ${kind} link to a 0644 file of uid ${user.uid}`, async () => {
          const { data, home } = dataDirOf(user);
          const target = join(data, "..", "known.txt");
          writeFileSync(target, `${PLANTED}\n`, { mode: 0o644 });
          chmodSync(target, 0o644);
          chownSync(target, user.uid, user.uid);
          if (kind === "symbolic") symlinkSync(target, join(data, file));
          else linkSync(target, join(data, file));
          const r = await airlockAs(user, ["token", "--data-dir", data], { HOME: home });
          expect(r.stderr).toContain("is a link to a file other users can read");
          expect(r.code).toBe(2);
          expect(r.stdout).not.toContain("API token:");
          expect(statSync(target).mode & 0o777).toBe(0o644);
        });
      }
    }
  }
});

/**
 * `airlock doctor` said "tokens ok" for token files every command refuses (a FIFO, 4097 bytes, an empty file, a link
 * to a file others can read): it only looked at owner and mode. It now fails the check, naming why — without
 * blocking on the FIFO.
 */
describe("airlock doctor fails its tokens check for a token file the runtime refuses", () => {
  const cases: [string, (p: string) => void, string][] = [
    ["a FIFO", (p) => expect(Bun.spawnSync(["mkfifo", "-m", "600", p]).exitCode).toBe(0), "not a regular file"],
    ["4097 bytes", (p) => writeFileSync(p, "a".repeat(4097), { mode: 0o600 }), "larger than 4096 bytes"],
    ["empty", (p) => writeFileSync(p, "", { mode: 0o600 }), "empty"],
    ["a symbolic link to a 0644 file", (p) => {
      const target = join(p, "..", "..", "known.txt");
      writeFileSync(target, `${PLANTED}\n`, { mode: 0o644 });
      chmodSync(target, 0o644);
      symlinkSync(target, p);
    }, "a link to a file others can read"],
  ];
  for (const [what, plant, why] of cases) {
    test(`approver-token as ${what}`, async () => {
      const user = testUsers()[0]!;
      const { data, home } = dataDirOf(user);
      writeFileSync(join(data, "api-token"), `${PLANTED}\n`, { mode: 0o600 });
      plant(join(data, "approver-token"));
      const r = await airlockAs(user, ["doctor", "--json", "--data-dir", data], { HOME: home });
      const tokens = (JSON.parse(r.stdout) as { checks: { name: string; status: string; message: string }[] }).checks.find((c) => c.name === "tokens");
      expect(tokens?.status).toBe("fail");
      expect(tokens?.message).toContain(`approver-token (${why})`);
    });
  }
});

/**
 * approver-token made a link to api-token (both this user's, 0600: every check above passes) by whoever could write
 * the data dir — the lower-privileged owner of a data dir `sudo airlock` uses — turned the approver token into the API
 * token: any process that may call the API (a tool with the API token in reach, the console link) could answer the
 * cards that need user proof. One token for both is refused.
 */
describe("an approver token that is the API token is refused", () => {
  for (const user of testUsers()) {
    for (const kind of ["symbolic link", "copy"] as const) {
      test(`as ${user.name}: approver-token as a ${kind} of api-token`, async () => {
        const { data, home } = dataDirOf(user);
        const api = join(data, "api-token");
        writeFileSync(api, `${PLANTED}\n`, { mode: 0o600 });
        chownSync(api, user.uid, user.uid);
        if (kind === "symbolic link") symlinkSync(api, join(data, "approver-token"));
        else {
          writeFileSync(join(data, "approver-token"), `${PLANTED}\n`, { mode: 0o600 });
          chownSync(join(data, "approver-token"), user.uid, user.uid);
        }
        const r = await airlockAs(user, ["token", "--data-dir", data], { HOME: home });
        expect(r.stderr).toContain("is the API token");
        expect(r.code).toBe(2);
        expect(r.stdout).not.toContain("API token:");
      });
    }
  }
});
