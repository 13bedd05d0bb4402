/**
 * @module test/security/installer-installs-only-a-verified-binary.test
 * scripts/install.sh against a local HTTP server (Bun.serve on loopback) serving a real release folder
 * (the run's shared release, test/harness-release.ts; the server holds its linux-x64 binary only, with
 * the release's SHA256SUMS, install.sh and release.json, as a mirror of one build would): a good install with curl and with wget, a tampered binary refused
 * with nothing installed, an architecture with no build refused, a musl machine asking for the musl
 * build, and one the server does not hold refused. Run as root and as an unprivileged user.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import pkg from "../../package.json" with { type: "json" };
import { sharedTempDir, type TestUser, testUsers } from "../as-user.ts";
import { REPO, sharedRelease } from "../harness-release.ts";
import { toolsDir } from "../tools-dir.ts";

const INSTALL = join(REPO, "scripts", "install.sh");
const BIN = "airlock-linux-x64";
let server: ReturnType<typeof Bun.serve>;
let base = "";
let tampered = "";

beforeAll(async () => {
  const dir = await sharedRelease();
  // The tampered folder: the same SHA256SUMS, one byte of the binary changed.
  const tdir = sharedTempDir("airlock-tampered-");
  const bytes = readFileSync(join(dir, BIN));
  bytes[bytes.length - 100] = bytes[bytes.length - 100]! ^ 0xff;
  writeFileSync(join(tdir, BIN), bytes);
  copyFileSync(join(dir, "SHA256SUMS"), join(tdir, "SHA256SUMS"));
  // The good folder serves the x64 build only (the arm64 and musl machines below must find no build).
  const served = new Set([BIN, "SHA256SUMS", "install.sh", "release.json"]);
  const roots: Record<string, string> = { good: dir, tampered: tdir };
  server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(req) {
      const [, root, name, ...rest] = new URL(req.url).pathname.split("/");
      const folder = roots[root ?? ""];
      if (!folder || !name || rest.length || !served.has(name) || !existsSync(join(folder, name))) return new Response("not found", { status: 404 });
      return new Response(Bun.file(join(folder, name)));
    },
  });
  base = `http://127.0.0.1:${server.port}/good`;
  tampered = `http://127.0.0.1:${server.port}/tampered`;
}, 900_000);

afterAll(() => server?.stop(true));

/** Runs the installer (asynchronously: the server answers from this same process). */
async function install(user: TestUser, home: string, tools: string, args: string[], env: Record<string, string> = {}) {
  const proc = Bun.spawn([...user.prefix, "/bin/sh", INSTALL, ...args], {
    cwd: home,
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
    env: { PATH: tools, HOME: home, ...env },
  });
  const [code, stdout, stderr] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  return { code, stdout, stderr };
}

function newHome(): string {
  return sharedTempDir("airlock-home-");
}

describe.each(testUsers())("scripts/install.sh, run as $name", (user: TestUser) => {
  test("installs the verified binary to ~/.local/bin/airlock with curl, and it runs", async () => {
    const home = newHome();
    const r = await install(user, home, toolsDir({ without: "wget" }), [base]);
    expect(r.stderr).toContain(`installed airlock ${pkg.version} (${BIN}`);
    expect(r.code).toBe(0);
    const bin = join(home, ".local", "bin", "airlock");
    const v = Bun.spawn([bin, "--version"], { stdout: "pipe" });
    expect(await new Response(v.stdout).text()).toBe(`${pkg.version}\n`);
    expect(readdirSync(join(home, ".local", "bin"))).toEqual(["airlock"]);
  }, 300_000);

  test("the README's Install blocks, run as written with BASE set to the release folder, install the binary", async () => {
    const blocks = [...readFileSync(join(REPO, "README.md"), "utf8").matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((m) => m[1]!);
    const [line, manual] = blocks;
    expect(line).toContain('curl -fsSL "$BASE/install.sh" | sh -s -- "$BASE"');
    expect(manual).toContain("sha256sum --check");
    for (const [i, block] of [line!, manual!].entries()) {
      const home = newHome();
      // The reader's own BASE replaces the placeholder line.
      const script = `set -euo pipefail\n${block.replace(/^BASE=.*$/m, "")}`;
      const proc = Bun.spawn([...user.prefix, "/bin/bash", "-c", script], {
        cwd: home,
        stdin: "ignore",
        stdout: "pipe",
        stderr: "pipe",
        env: { PATH: `${join(home, ".local", "bin")}:${toolsDir()}`, HOME: home, BASE: base },
      });
      const [code, stdout, stderr] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
      expect({ block: i, code, stderr }).toMatchObject({ block: i, code: 0 });
      expect(existsSync(join(home, ".local", "bin", "airlock"))).toBe(true);
      if (i === 0) expect(stderr).toContain(`installed airlock ${pkg.version}`);
      else expect(stdout).toContain(`airlock-linux-x64: OK\nairlock ${pkg.version} (commit `);
    }
  }, 300_000);

  test("installs with wget when there is no curl, to --prefix, base URL from AIRLOCK_BASE_URL", async () => {
    const home = newHome();
    const prefix = join(home, "opt");
    mkdirSync(prefix);
    chmodSync(prefix, 0o777);
    const r = await install(user, home, toolsDir({ without: "curl" }), ["--prefix", prefix], { AIRLOCK_BASE_URL: `${base}/` });
    expect(r.code).toBe(0);
    expect(existsSync(join(prefix, "bin", "airlock"))).toBe(true);
    expect(existsSync(join(home, ".local"))).toBe(false);
  }, 300_000);

  test("refuses a tampered binary: says the checksum does not match, installs nothing", async () => {
    const home = newHome();
    for (const without of ["wget", "curl"]) {
      const r = await install(user, home, toolsDir({ without }), [tampered]);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`checksum mismatch for ${BIN}`);
      expect(r.stderr).toContain("nothing installed");
      expect(existsSync(join(home, ".local"))).toBe(false);
    }
  }, 300_000);

  test("refuses an architecture with no build, and a build the server does not hold", async () => {
    const home = newHome();
    const riscv = await install(user, home, toolsDir({ machine: "riscv64" }), [base]);
    expect(riscv.code).toBe(1);
    expect(riscv.stderr).toContain("no airlock build for this architecture: riscv64");
    // aarch64: the folder holds only the x64 build.
    const arm = await install(user, home, toolsDir({ machine: "aarch64" }), [base]);
    expect(arm.code).toBe(1);
    expect(arm.stderr).toContain(`could not download ${base}/airlock-linux-arm64; nothing installed`);
    // musl (as `ldd --version` says on Alpine): asks for the musl build, which this folder lacks.
    const musl = await install(user, home, toolsDir({ musl: true }), [base]);
    expect(musl.code).toBe(1);
    expect(musl.stderr).toContain(`could not download ${base}/airlock-linux-x64-musl; nothing installed`);
    expect(existsSync(join(home, ".local"))).toBe(false);
  }, 300_000);

  test("without a base URL it prints its usage and exits 2", async () => {
    const r = await install(user, newHome(), toolsDir(), []);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("usage: install.sh [--prefix DIR] BASE_URL");
  });
});
