/**
 * @module test/security/serve-lock-temp-never-followed
 * `airlock serve` writes its lock through a temporary file `serve.lock.<pid>.tmp` in the data dir (store/serve-lock.ts),
 * which anything that can write the data dir (a hook, a tool under danger-full-access) can plant first.
 * FINDING (medium): the temp was written with a plain `writeFileSync`, which follows a symbolic link there and
 * truncates whatever it leads to: a link planted at the name of the next server's pid made that server overwrite the
 * link's target with its lock JSON (and then start, its lock itself a link to that file). Fixed: the temp is created
 * with O_CREAT|O_EXCL|O_NOFOLLOW; a leftover regular file of this user is removed first, anything else there refuses the
 * start `data_dir_unusable`, untouched.
 * Real `airlock serve` processes, as root and as nobody: `sh` plants the file at its own pid's name, then `exec`s serve
 * (same pid). A 60 s guard kills (and fails) a hang.
 */
import { describe, expect, test } from "bun:test";
import { existsSync, lstatSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { dataDirFor, IS_ROOT, NOBODY, sharedTempDir, testUsers, type TestUser } from "../as-user.ts";

const MAIN = join(import.meta.dir, "..", "..", "src", "main.ts");
const VICTIM_TEXT = "precious: keep me\n";

/** A data dir `user` owns with a scripted provider, and a file `victim.txt` there that `user` may write. */
function dataDir(user: TestUser): string {
  const dir = sharedTempDir("airlock-lock-tmp-");
  writeFileSync(join(dir, "airlock.yaml"), "mode: smart\nprovider: { name: scripted, script: turns.yaml }\n");
  writeFileSync(join(dir, "turns.yaml"), 'turns:\n  - text: "done"\n');
  writeFileSync(join(dir, "victim.txt"), VICTIM_TEXT);
  if (user.uid !== process.getuid?.()) expect(Bun.spawnSync(["chown", "-R", `${user.uid}:${user.uid}`, dir]).exitCode).toBe(0);
  return dataDirFor(dir, user); // 0700: airlock refuses a data dir others may write

}

/**
 * Runs `plant` (shell, `$T` the temp's path for this very process's pid, `$D` the data dir) as `user`, then `exec`s
 * `airlock serve` in the same process. Resolves once it listens (then kills it) or exits.
 */
async function serveAfter(user: TestUser, dir: string, plant: string): Promise<{ listened: boolean; exitCode: number | null; stderr: string }> {
  const script = `T="$D/serve.lock.$$.tmp"; ${plant}; exec "$BUN" "$MAIN" serve --port 0 --data-dir "$D"`;
  const proc = Bun.spawn(["timeout", "-s", "KILL", "60", ...user.prefix, "sh", "-c", script], {
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: dir, D: dir, BUN: process.execPath, MAIN },
    stdin: "ignore",
    stdout: "ignore",
    stderr: "pipe",
  });
  let stderr = "";
  const reader = proc.stderr.pipeThrough(new TextDecoderStream()).getReader();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    stderr += value;
    if (/listening on http/.test(stderr)) {
      // SIGTERM, which `timeout` passes on to the server (a SIGKILL would end `timeout` alone and leave the server running)
      proc.kill("SIGTERM");
      await proc.exited;
      return { listened: true, exitCode: null, stderr };
    }
  }
  return { listened: false, exitCode: await proc.exited, stderr };
}

for (const user of testUsers()) {
  describe(`serve.lock's temporary file (as ${user.name})`, () => {
    test("a symbolic link there is never followed: serve refuses data_dir_unusable, the link's target untouched", async () => {
      const dir = dataDir(user);
      const r = await serveAfter(user, dir, 'ln -s "$D/victim.txt" "$T"');
      expect({ listened: r.listened, exitCode: r.exitCode }).toEqual({ listened: false, exitCode: 2 });
      expect(r.stderr).toContain("data_dir_unusable");
      expect(r.stderr).toContain("a symbolic link");
      expect(readFileSync(join(dir, "victim.txt"), "utf8")).toBe(VICTIM_TEXT);
      expect(existsSync(join(dir, "serve.lock"))).toBe(false);
    }, 90_000);

    test("a dangling symbolic link there creates nothing where it leads", async () => {
      const dir = dataDir(user);
      const r = await serveAfter(user, dir, 'ln -s "$D/made-by-airlock" "$T"');
      expect({ listened: r.listened, exitCode: r.exitCode }).toEqual({ listened: false, exitCode: 2 });
      expect(existsSync(join(dir, "made-by-airlock"))).toBe(false);
    }, 90_000);

    test("a FIFO there is refused at once, never opened", async () => {
      const dir = dataDir(user);
      const r = await serveAfter(user, dir, 'mkfifo -m 600 "$T"');
      expect({ listened: r.listened, exitCode: r.exitCode }).toEqual({ listened: false, exitCode: 2 });
      expect(r.stderr).toContain("not a regular file");
    }, 90_000);

    test("a leftover regular file of this user (a server with this pid killed mid-write) is replaced: serve starts", async () => {
      const dir = dataDir(user);
      const r = await serveAfter(user, dir, 'printf "{\\"pid\\": 1, torn" > "$T"');
      expect(r.listened).toBe(true);
    }, 90_000);
  });
}

describe.if(IS_ROOT)("serve.lock's temporary file of another user", () => {
  test("a regular file of another user there is refused and left in place (root's serve)", async () => {
    const [root] = testUsers();
    const dir = dataDir(root!);
    const r = await serveAfter(root!, dir, `: > "$T"; chown ${NOBODY}:${NOBODY} "$T"; echo "$T" > "$D/planted-name"`);
    expect({ listened: r.listened, exitCode: r.exitCode }).toEqual({ listened: false, exitCode: 2 });
    expect(r.stderr).toContain(`a file of another user (uid ${NOBODY})`);
    expect(lstatSync(readFileSync(join(dir, "planted-name"), "utf8").trim()).uid).toBe(NOBODY);
  }, 90_000);
});
