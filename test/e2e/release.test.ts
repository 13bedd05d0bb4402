/**
 * @module test/e2e/release.test
 * `npm run release` (build/release.ts): the three Linux artifacts, install.sh, SHA256SUMS and release.json (the
 * run's shared release, test/harness-release.ts; a second build of the same commit giving the same bytes is
 * release-reproducible.test.ts, on the other worker); the arm64 and musl artifacts have the right ELF
 * header; and the linux-x64 artifact runs the way a user meets it — copied alone into an empty folder,
 * run in a bwrap view of the system with no Node, Bun, node_modules, home or checkout (`--version`,
 * `version --json`, `doctor --json`, a headless `airlock run` with the scripted provider).
 */
import { expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stringify } from "yaml";
import pkg from "../../package.json" with { type: "json" };
import { removeAfterAllTests } from "../cleanup.ts";
import { pinnedBunVersion, runtimeFor, TARGETS } from "../../build/release.ts";
import { readElf, REPO, sharedRelease } from "../harness-release.ts";

const FILES = ["airlock-linux-x64", "airlock-linux-arm64", "airlock-linux-x64-musl"];
const sha256 = (path: string) => createHash("sha256").update(readFileSync(path)).digest("hex");

test("npm run release builds the three Linux artifacts with SHA256SUMS and release.json", async () => {
  const dir = await sharedRelease();
  expect(readdirSync(dir).sort()).toEqual([...FILES, "SHA256SUMS", "install.sh", "release.json"].sort());
  expect(readFileSync(join(dir, "install.sh"), "utf8")).toBe(readFileSync(join(REPO, "scripts", "install.sh"), "utf8"));
  const manifest = JSON.parse(readFileSync(join(dir, "release.json"), "utf8"));
  const head = Bun.spawnSync(["git", "rev-parse", "HEAD"], { cwd: REPO }).stdout.toString().trim();
  expect(manifest).toMatchObject({ name: "airlock", version: pkg.version, bun_version: pkg.devDependencies.bun });
  expect(manifest.commit).toMatch(new RegExp(`^${head}(-dirty)?$`));
  expect(manifest.build_date).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  expect(manifest.artifacts.map((a: any) => [a.file, a.target])).toEqual([
    ["airlock-linux-x64", "bun-linux-x64"],
    ["airlock-linux-arm64", "bun-linux-arm64"],
    ["airlock-linux-x64-musl", "bun-linux-x64-musl"],
  ]);
  for (const a of manifest.artifacts) {
    const path = join(dir, a.file);
    expect({ file: a.file, bytes: a.bytes, sha256: a.sha256 }).toEqual({ file: a.file, bytes: readFileSync(path).length, sha256: sha256(path) });
  }
  const sums = [...manifest.artifacts.map((a: any) => `${a.sha256}  ${a.file}\n`), `${sha256(join(dir, "install.sh"))}  install.sh\n`];
  expect(readFileSync(join(dir, "SHA256SUMS"), "utf8")).toBe(sums.join(""));
  // Nothing of the checkout's location is embedded, so a build elsewhere gives the same bytes too.
  const where = [REPO, realpathSync(join(REPO, "node_modules"))];
  for (const f of FILES) {
    const bytes = readFileSync(join(dir, f));
    for (const w of where) expect({ f, w, at: bytes.indexOf(w) }).toEqual({ f, w, at: -1 });
  }
  const check = Bun.spawnSync(["sha256sum", "-c", "SHA256SUMS"], { cwd: dir, stdout: "pipe", stderr: "pipe" });
  expect(check.exitCode).toBe(0);
}, 900_000);

/**
 * The size guard (issue 22: within 8 MB of the Bun runtime an artifact carries). Measured 3,981,608 B
 * over on 2026-12-02 with pg-boss counted in (docs/performance.md, release size), and ~1.1 MB more from
 * 2026-12-03 with the start path's bytecode (build/bytecode.ts: its chunks, the bytecode string table, the
 * pre-linked graph, three builtins; issue 20, tenth session). The bound still leaves room for growth
 * without letting a plainly bundled big dependency or every chunk's bytecode (+7.7 MB) in unnoticed.
 */
const MAX_OVER_RUNTIME_BYTES = 5_800_000;

test(`each artifact is at most ${MAX_OVER_RUNTIME_BYTES} bytes over the Bun runtime it carries`, async () => {
  const dir = await sharedRelease();
  const over: Record<string, number> = {};
  for (const t of TARGETS) over[t.file] = statSync(join(dir, t.file)).size - statSync(await runtimeFor(t, pinnedBunVersion())).size;
  for (const [file, bytes] of Object.entries(over)) expect({ file, within: bytes <= MAX_OVER_RUNTIME_BYTES, bytes }).toEqual({ file, within: true, bytes });
  expect(Object.keys(over).sort()).toEqual([...FILES].sort());
}, 900_000);

test("the arm64 and musl artifacts are 64-bit ELF for their machine and C library", async () => {
  const dir = await sharedRelease();
  expect(readElf(join(dir, "airlock-linux-arm64"))).toEqual({ elfClass: 2, data: 1, machine: 183, interpreter: "/lib/ld-linux-aarch64.so.1" });
  expect(readElf(join(dir, "airlock-linux-x64-musl"))).toEqual({ elfClass: 2, data: 1, machine: 62, interpreter: "/lib/ld-musl-x86_64.so.1" });
  expect(readElf(join(dir, "airlock-linux-x64"))).toEqual({ elfClass: 2, data: 1, machine: 62, interpreter: "/lib64/ld-linux-x86-64.so.2" });
}, 900_000);

/**
 * A bwrap view of the system as a user's machine: /usr/bin, /usr/lib*, /etc, a tmpfs home, and the
 * empty folder holding only the binary (with a data dir and workspace) as /tmp. Node in /usr/bin and
 * the global node_modules are masked; /usr/local, /root, /work and the checkout are not there.
 */
function userView(tmp: string, argv: string[]): { exitCode: number; stdout: string; stderr: string } {
  const args = ["bwrap", "--die-with-parent", "--unshare-pid", "--proc", "/proc", "--dev", "/dev"];
  args.push("--ro-bind", "/usr/bin", "/usr/bin", "--ro-bind", "/usr/lib", "/usr/lib", "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib");
  if (existsSync("/usr/lib64")) args.push("--ro-bind", "/usr/lib64", "/usr/lib64", "--symlink", "usr/lib64", "/lib64");
  args.push("--ro-bind", "/etc", "/etc", "--bind", tmp, "/tmp", "--tmpfs", "/home/user", "--chdir", "/tmp/ws");
  for (const node of ["/usr/bin/node", "/usr/bin/bun"]) if (existsSync(node)) args.push("--ro-bind", "/dev/null", node);
  if (existsSync("/usr/lib/node_modules")) args.push("--tmpfs", "/usr/lib/node_modules");
  const r = Bun.spawnSync([...args, ...argv], { stdout: "pipe", stderr: "pipe", env: { PATH: "/usr/bin:/bin", HOME: "/home/user", LANG: "C.UTF-8" }, timeout: 120_000 });
  return { exitCode: r.exitCode ?? -1, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
}

test("the linux-x64 artifact alone, where no Node, Bun, node_modules or checkout is visible: --version, version --json, doctor --json, a headless scripted run", async () => {
  const dir = await sharedRelease();
  const manifest = JSON.parse(readFileSync(join(dir, "release.json"), "utf8"));
  const tmp = mkdtempSync(join(tmpdir(), "airlock-user-view-"));
  removeAfterAllTests(tmp);
  mkdirSync(join(tmp, "bin"));
  mkdirSync(join(tmp, "data"));
  mkdirSync(join(tmp, "ws"));
  copyFileSync(join(dir, "airlock-linux-x64"), join(tmp, "bin", "airlock"));
  Bun.spawnSync(["chmod", "755", join(tmp, "bin", "airlock")]);
  writeFileSync(join(tmp, "data", "airlock.yaml"), stringify({ provider: { name: "scripted", script: "turns.yaml" }, mode: "autonomous", sandbox: "workspace-write" }));
  writeFileSync(
    join(tmp, "data", "turns.yaml"),
    stringify({ turns: [{ tool_calls: [{ name: "code_execution__execute", arguments: { code: "return 6 * 7;" } }] }, { text: "the answer is 42" }] }),
  );

  // The view really hides them.
  const look = userView(tmp, ["sh", "-c", "for x in node nodejs bun npm npx; do command -v $x; done; ls -d /usr/local /root /work /home/user/* 2>/dev/null; ls -A /tmp/bin; true"]);
  expect(look).toMatchObject({ exitCode: 0, stdout: "airlock\n" });
  expect(existsSync(REPO)).toBe(true);

  const v = userView(tmp, ["/tmp/bin/airlock", "--version"]);
  expect(v).toMatchObject({ exitCode: 0, stdout: `${pkg.version}\n` });

  const j = userView(tmp, ["/tmp/bin/airlock", "version", "--json"]);
  expect(j.exitCode).toBe(0);
  const { artifacts, ...top } = manifest;
  expect(JSON.parse(j.stdout)).toEqual({ ...top, ...artifacts.find((a: any) => a.file === "airlock-linux-x64") });

  // doctor: its checks run from the binary alone (bwrap inside this view, the config, the scripted provider).
  const doc = userView(tmp, ["/tmp/bin/airlock", "doctor", "--json", "--data-dir", "/tmp/data"]);
  const report = JSON.parse(doc.stdout);
  expect(doc.exitCode).toBe(report.ok ? 0 : 1);
  const status = Object.fromEntries(report.checks.map((c: any) => [c.name, c.status]));
  expect(status).toMatchObject({ config: "ok", provider: "ok" });
  expect(Object.keys(status)).toEqual(expect.arrayContaining(["bubblewrap", "python3", "data_dir", "tokens", "server_port"]));

  const run = userView(tmp, ["/tmp/bin/airlock", "run", "what is six times seven?", "--headless", "--output-format", "json", "--data-dir", "/tmp/data"]);
  expect(run.stderr).not.toContain("Error:");
  expect(run.exitCode).toBe(0);
  const result = JSON.parse(run.stdout);
  expect(result).toMatchObject({ status: "completed", tool_calls: 1, result: "the answer is 42", refused_calls: [] });
}, 900_000);

/** qemu-user's arm64 emulator and Debian's arm64 C library (`.ci/run` installs `qemu-user` and `libc6-arm64-cross`). */
const QEMU_ARM64 = Bun.which("qemu-aarch64");
const ARM64_SYSROOT = "/usr/aarch64-linux-gnu";
const canRunArm64 = QEMU_ARM64 !== null && existsSync(join(ARM64_SYSROOT, "lib", "ld-linux-aarch64.so.1"));

/**
 * The arm64 artifact runs, under qemu-user: its embedded module graph is rewritten after the build to keep bytecode
 * for the start path only (build/bytecode.ts), so a layout mistake for that target would make a binary that does
 * not start; the ELF header test above cannot see that. `--version`, an argument error, and a headless scripted run
 * to its answer. Not a script: under qemu-user the first script aborts the process in JavaScriptCore ("mprotect
 * failed: Cannot allocate memory", making the script channel's growable SharedArrayBuffer), and so does the linux-x64
 * artifact under qemu-x86_64, which runs natively — qemu's emulation of the mapping, not the arm64 build.
 */
test.skipIf(!canRunArm64)("the linux-arm64 artifact runs under qemu-user: --version, an argument error, a headless scripted run", async () => {
  const dir = await sharedRelease();
  const tmp = mkdtempSync(join(tmpdir(), "airlock-arm64-"));
  removeAfterAllTests(tmp);
  mkdirSync(join(tmp, "data"), { mode: 0o700 });
  mkdirSync(join(tmp, "ws"));
  writeFileSync(join(tmp, "data", "airlock.yaml"), stringify({ provider: { name: "scripted", script: "turns.yaml" }, mode: "autonomous" }));
  writeFileSync(
    join(tmp, "data", "turns.yaml"),
    stringify({ turns: [{ text: "the answer is 42" }] }),
  );
  const arm = (args: string[]) =>
    Bun.spawnSync([QEMU_ARM64!, "-L", ARM64_SYSROOT, join(dir, "airlock-linux-arm64"), ...args], { cwd: join(tmp, "ws"), env: { PATH: "/usr/bin:/bin", HOME: tmp }, stdout: "pipe", stderr: "pipe", timeout: 300_000 });
  const text = (r: ReturnType<typeof arm>) => ({ exitCode: r.exitCode, stdout: r.stdout.toString(), stderr: r.stderr.toString() });
  expect(text(arm(["--version"]))).toMatchObject({ exitCode: 0, stdout: `${pkg.version}\n` });
  const bad = text(arm(["no-such-command"]));
  expect({ exitCode: bad.exitCode, says: bad.stderr.includes("unknown command 'no-such-command'") }).toEqual({ exitCode: 2, says: true });
  const run = text(arm(["run", "what is six times seven?", "--headless", "--output-format", "json", "--data-dir", join(tmp, "data"), "--workspace", join(tmp, "ws")]));
  expect(run.stderr).not.toContain("Error:");
  expect(run.exitCode).toBe(0);
  expect(JSON.parse(run.stdout)).toMatchObject({ status: "completed", tool_calls: 0, result: "the answer is 42", refused_calls: [] });
}, 900_000);
