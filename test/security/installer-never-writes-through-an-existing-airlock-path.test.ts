/**
 * @module test/security/installer-never-writes-through-an-existing-airlock-path.test
 * Attacks on scripts/install.sh with a tiny fake release (a shell script "binary" and its SHA256SUMS,
 * served by Bun.serve on loopback), run as root and as an unprivileged user:
 * - `$PREFIX/bin/airlock` that is a directory, or a symlink to a directory elsewhere: `mv -f` moved the
 *   verified binary *into* that directory (outside the install path), and the installer still said
 *   "installed" and exited 0. Now refused, nothing written.
 * - a SHA256SUMS with two disagreeing lines for the binary: the first line won silently. Now refused.
 * - a symlink `airlock` pointing at a file elsewhere is replaced, not written through (held before too).
 * - a link planted at the temp copy's name (`.airlock.new.$$`, guessable: the pid) in the bin folder: `cp`
 *   wrote the binary through it over the link's target, and `mv` then made `airlock` that link. Now the temp
 *   copy is a `mktemp` file.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { chmodSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { sharedTempDir, type TestUser, testUsers } from "../as-user.ts";

const INSTALL = join(import.meta.dir, "..", "..", "scripts", "install.sh");
const BIN = "airlock-linux-x64";
const BODY = "#!/bin/sh\necho 9.9.9-fake\n";
const SUM = createHash("sha256").update(BODY).digest("hex");
const OTHER = "0".repeat(64);
let server: ReturnType<typeof Bun.serve>;
let base = "";

const folders: Record<string, Record<string, string>> = {
  good: { [BIN]: BODY, SHA256SUMS: `${SUM}  ${BIN}\n` },
  // Two lines for the same file that disagree: the first one is the right hash.
  twolines: { [BIN]: BODY, SHA256SUMS: `${SUM}  ${BIN}\n${OTHER}  ${BIN}\n` },
};

beforeAll(() => {
  server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(req) {
      const [, root, name] = new URL(req.url).pathname.split("/");
      const body = folders[root ?? ""]?.[name ?? ""];
      return body === undefined ? new Response("not found", { status: 404 }) : new Response(body);
    },
  });
  base = `http://127.0.0.1:${server.port}`;
});

afterAll(() => server?.stop(true));

async function install(user: TestUser, prefix: string, url: string) {
  const proc = Bun.spawn([...user.prefix, "/bin/sh", INSTALL, "--prefix", prefix, url], {
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
    env: { PATH: "/usr/local/bin:/usr/bin:/bin", HOME: prefix },
  });
  const [code, stderr] = await Promise.all([proc.exited, new Response(proc.stderr).text()]);
  return { code, stderr };
}

/** A prefix with `bin/` made, both writable by the test user. */
function newPrefix(): string {
  const prefix = sharedTempDir("airlock-prefix-");
  mkdirSync(join(prefix, "bin"));
  chmodSync(join(prefix, "bin"), 0o777);
  return prefix;
}

describe.each(testUsers())("scripts/install.sh, run as $name", (user: TestUser) => {
  test("refuses when $PREFIX/bin/airlock is a symlink to a directory elsewhere: writes nothing there, exits 1", async () => {
    const prefix = newPrefix();
    const elsewhere = sharedTempDir("airlock-elsewhere-");
    symlinkSync(elsewhere, join(prefix, "bin", "airlock"));
    const r = await install(user, prefix, `${base}/good`);
    expect(readdirSync(elsewhere)).toEqual([]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("is a directory");
    expect(r.stderr).toContain("nothing installed");
    expect(readdirSync(join(prefix, "bin"))).toEqual(["airlock"]);
  }, 120_000);

  test("refuses when $PREFIX/bin/airlock is a directory: nothing moved into it, exits 1", async () => {
    const prefix = newPrefix();
    mkdirSync(join(prefix, "bin", "airlock"));
    chmodSync(join(prefix, "bin", "airlock"), 0o777);
    const r = await install(user, prefix, `${base}/good`);
    expect(readdirSync(join(prefix, "bin", "airlock"))).toEqual([]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("nothing installed");
  }, 120_000);

  test("replaces a symlink $PREFIX/bin/airlock to a file elsewhere instead of writing through it", async () => {
    const prefix = newPrefix();
    const elsewhere = sharedTempDir("airlock-elsewhere-");
    writeFileSync(join(elsewhere, "target"), "untouched\n", { mode: 0o666 });
    symlinkSync(join(elsewhere, "target"), join(prefix, "bin", "airlock"));
    const r = await install(user, prefix, `${base}/good`);
    expect(r.code).toBe(0);
    expect(readFileSync(join(elsewhere, "target"), "utf8")).toBe("untouched\n");
    expect(lstatSync(join(prefix, "bin", "airlock")).isFile()).toBe(true);
    expect(readFileSync(join(prefix, "bin", "airlock"), "utf8")).toBe(BODY);
  }, 120_000);

  test("refuses a SHA256SUMS with two disagreeing lines for the binary, installs nothing", async () => {
    const prefix = newPrefix();
    const r = await install(user, prefix, `${base}/twolines`);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`SHA256SUMS has more than one checksum for ${BIN}`);
    expect(existsSync(join(prefix, "bin", "airlock"))).toBe(false);
  }, 120_000);
});

describe.each(testUsers())("scripts/install.sh's temp copy, run as $name", (user: TestUser) => {
  test("never writes through a link planted at its temp copy's name in the bin folder (a guessable .airlock.new.$$)", async () => {
    const prefix = newPrefix();
    const elsewhere = sharedTempDir("airlock-elsewhere-");
    const victim = join(elsewhere, "victim");
    writeFileSync(victim, "precious\n");
    chmodSync(victim, 0o666);
    // Another user of the bin folder plants the link under the installer's pid ($$ survives `exec`).
    const script = `ln -s ${JSON.stringify(victim)} ${JSON.stringify(join(prefix, "bin"))}/.airlock.new.$$ && exec /bin/sh ${JSON.stringify(INSTALL)} --prefix ${JSON.stringify(prefix)} ${JSON.stringify(`${base}/good`)}`;
    const proc = Bun.spawn([...user.prefix, "/bin/sh", "-c", script], { stdin: "ignore", stdout: "pipe", stderr: "pipe", env: { PATH: "/usr/local/bin:/usr/bin:/bin", HOME: prefix } });
    const [code, stderr] = await Promise.all([proc.exited, new Response(proc.stderr).text()]);
    expect(readFileSync(victim, "utf8")).toBe("precious\n");
    expect({ code, stderr }).toMatchObject({ code: 0 });
    expect(lstatSync(join(prefix, "bin", "airlock")).isFile()).toBe(true);
    expect(readFileSync(join(prefix, "bin", "airlock"), "utf8")).toBe(BODY);
  }, 120_000);
});
