/**
 * @module build/release
 * `npm run release`: the release binaries in `dist/release/` — `airlock-linux-x64`, `airlock-linux-arm64`,
 * `airlock-linux-x64-musl` — each compiled by build/build.ts with `--target` and the Bun runtime of that
 * target taken from its npm package (pinned to package.json's `bun` version), plus `install.sh`
 * (scripts/install.sh), `SHA256SUMS` (sha256sum's format: the binaries and install.sh) and `release.json`. Nothing is downloaded outside the npm registry: the x64
 * runtime is the one npm installed (`node_modules/bun/bin/bun.exe`, from `@oven/bun-linux-x64`); the
 * others are fetched once with `npm pack` into `build/.cache/` and checked against the integrity hash
 * package-lock.json records for them (the registry's `dist.integrity`).
 *
 * Reproducible: the build date is the commit's date (or `SOURCE_DATE_EPOCH`), so two builds of one
 * commit give identical bytes. Progress goes to stderr.
 *
 * Usage: `bun build/release.ts [--out DIR] [--target linux-x64|linux-arm64|linux-x64-musl]…`
 */
import { createHash } from "node:crypto";
import { chmodSync, copyFileSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { build, compileInputs, lockOutput, ROOT } from "./build.ts";
import { readElf } from "./elf.ts";

/** One release target. `pkg` is the npm package carrying its Bun runtime (`bin/bun` in the tarball). */
export interface ReleaseTarget {
  /** Short name for `--target`. */
  name: "linux-x64" | "linux-arm64" | "linux-x64-musl";
  file: string;
  target: Bun.Build.CompileTarget;
  pkg: string;
  /** The runtime's ELF e_machine (62 x86-64, 183 AArch64) and interpreter: a runtime of another platform is refused. */
  machine: number;
  interpreter: string;
}

export const TARGETS: readonly ReleaseTarget[] = [
  { name: "linux-x64", file: "airlock-linux-x64", target: "bun-linux-x64", pkg: "@oven/bun-linux-x64", machine: 62, interpreter: "/lib64/ld-linux-x86-64.so.2" },
  { name: "linux-arm64", file: "airlock-linux-arm64", target: "bun-linux-arm64", pkg: "@oven/bun-linux-aarch64", machine: 183, interpreter: "/lib/ld-linux-aarch64.so.1" },
  { name: "linux-x64-musl", file: "airlock-linux-x64-musl", target: "bun-linux-x64-musl", pkg: "@oven/bun-linux-x64-musl", machine: 62, interpreter: "/lib/ld-musl-x86_64.so.1" },
];

/** Where fetched runtime tarballs and their unpacked `bun` binaries are kept (gitignored). */
export const CACHE_DIR = join(ROOT, "build", ".cache");
export const RELEASE_DIR = join(ROOT, "dist", "release");

/** One row of release.json's `artifacts`. */
export interface Artifact {
  file: string;
  target: string;
  /** Size in bytes. */
  bytes: number;
  /** Lowercase hex sha256. */
  sha256: string;
}

/** release.json. */
export interface ReleaseManifest {
  name: "airlock";
  version: string;
  /** git commit (40 hex), `-dirty` appended when the tree had uncommitted changes. */
  commit: string;
  /** ISO 8601 UTC, the commit's date (or SOURCE_DATE_EPOCH, seconds). */
  build_date: string;
  bun_version: string;
  artifacts: Artifact[];
}

type Log = (line: string) => void;

function readJson(path: string): any {
  return JSON.parse(readFileSync(path, "utf8"));
}

/** The Bun version package.json pins (`devDependencies.bun`, an exact version). Throws when it is a range. */
export function pinnedBunVersion(): string {
  const v = String(readJson(join(ROOT, "package.json")).devDependencies?.bun ?? "");
  if (!/^\d+\.\d+\.\d+$/.test(v)) throw new Error(`package.json must pin devDependencies.bun to an exact version, not '${v}'`);
  return v;
}

function git(args: string[]): string {
  const r = Bun.spawnSync(["git", ...args], { cwd: ROOT, stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`git ${args.join(" ")} failed: ${r.stderr.toString().trim()}`);
  return r.stdout.toString().trim();
}

/** commit and build date for this checkout (see {@link ReleaseManifest}). */
export function commitFacts(): { commit: string; build_date: string } {
  const head = git(["rev-parse", "HEAD"]);
  const dirty = git(["status", "--porcelain", "--untracked-files=no"]) !== "";
  const epoch = process.env.SOURCE_DATE_EPOCH && /^\d+$/.test(process.env.SOURCE_DATE_EPOCH) ? Number(process.env.SOURCE_DATE_EPOCH) : Number(git(["log", "-1", "--format=%ct", "HEAD"]));
  return { commit: dirty ? `${head}-dirty` : head, build_date: new Date(epoch * 1000).toISOString().replace(/\.000Z$/, "Z") };
}

/** The integrity (`sha512-…`) package-lock.json records for `pkg`; throws when missing or at another version. */
function lockedIntegrity(pkg: string, version: string): string {
  const entry = readJson(join(ROOT, "package-lock.json")).packages?.[`node_modules/${pkg}`];
  if (!entry?.integrity) throw new Error(`package-lock.json has no integrity for ${pkg}`);
  if (entry.version !== version) throw new Error(`package-lock.json has ${pkg}@${entry.version}, package.json pins bun ${version}`);
  return entry.integrity;
}

function sha256File(path: string): string {
  return createHash("sha256").update(readFileSync(path)).digest("hex");
}

/**
 * Path of the Bun runtime binary for `t`, version `version`. linux-x64: the one npm installed, checked
 * with `--version`. Others: `npm pack PKG@VERSION` into {@link CACHE_DIR} (once), the tarball's sha512
 * compared with package-lock.json's integrity, then `package/bin/bun` unpacked beside it. Throws on a
 * mismatch (the tarball is removed) or a failed npm/tar. Fetches of one runtime are serialised by the lock
 * folder `<dir>.lock` (build/build.ts `lockOutput`).
 */
export async function runtimeFor(t: ReleaseTarget, version: string, log: Log = () => {}): Promise<string> {
  if (t.name === "linux-x64") {
    const bin = join(ROOT, "node_modules", "bun", "bin", "bun.exe");
    const got = Bun.spawnSync([bin, "--version"], { stdout: "pipe" }).stdout.toString().trim();
    if (got !== version) throw new Error(`${bin} is Bun ${got || "(not runnable)"}, package.json pins ${version}`);
    return bin;
  }
  const dir = join(CACHE_DIR, `${t.pkg.replace("@", "").replace("/", "-")}-${version}`);
  const bin = join(dir, "bun");
  if (existsSync(bin)) return bin;
  mkdirSync(CACHE_DIR, { recursive: true });
  // Two builds at once (a test run's two release builds) fetch into the same tarball path: one at a time.
  const unlock = await lockOutput(dir);
  try {
    return fetchRuntime(t, version, dir, bin, log);
  } finally {
    unlock();
  }
}

/** {@link runtimeFor}'s fetch, check and unpack of `t`'s runtime into `dir`, under its lock (another process may have done it meanwhile). */
function fetchRuntime(t: ReleaseTarget, version: string, dir: string, bin: string, log: Log): string {
  if (existsSync(bin)) return bin;
  const tgz = join(CACHE_DIR, `${t.pkg.replace("@", "").replace("/", "-")}-${version}.tgz`);
  if (!existsSync(tgz)) {
    log(`fetching ${t.pkg}@${version} from the npm registry (npm pack)`);
    const r = Bun.spawnSync(["npm", "pack", `${t.pkg}@${version}`, "--pack-destination", CACHE_DIR, "--silent"], { cwd: CACHE_DIR, stdout: "pipe", stderr: "pipe" });
    if (r.exitCode !== 0 || !existsSync(tgz)) throw new Error(`npm pack ${t.pkg}@${version} failed: ${r.stderr.toString().trim()}`);
  }
  const want = lockedIntegrity(t.pkg, version);
  const got = `sha512-${createHash("sha512").update(readFileSync(tgz)).digest("base64")}`;
  if (got !== want) {
    rmSync(tgz, { force: true });
    throw new Error(`${t.pkg}@${version}: tarball integrity ${got} is not package-lock.json's ${want}; removed it`);
  }
  const tmp = `${dir}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  const x = Bun.spawnSync(["tar", "-xzf", tgz, "-C", tmp, "package/bin/bun"], { stdout: "pipe", stderr: "pipe" });
  if (x.exitCode !== 0) throw new Error(`unpacking ${tgz} failed: ${x.stderr.toString().trim()}`);
  mkdirSync(dir, { recursive: true });
  renameSync(join(tmp, "package", "bin", "bun"), bin);
  chmodSync(bin, 0o755);
  rmSync(tmp, { recursive: true, force: true });
  log(`verified ${t.pkg}@${version} (${want.slice(0, 20)}…), runtime ${relative(ROOT, bin)}`);
  return bin;
}

/**
 * Builds the release into `out` (default dist/release): each of `targets` (default all three), then
 * install.sh, SHA256SUMS and release.json. Throws on any failure (the bundler's messages, a bad runtime tarball).
 */
export async function release(opts: { out?: string; targets?: readonly ReleaseTarget[]; log?: Log } = {}): Promise<ReleaseManifest> {
  const out = opts.out ?? RELEASE_DIR;
  const targets = opts.targets ?? TARGETS;
  const log = opts.log ?? (() => {});
  const pkg = readJson(join(ROOT, "package.json"));
  const bunVersion = pinnedBunVersion();
  if (Bun.version !== bunVersion) throw new Error(`the bundler is Bun ${Bun.version}; package.json pins ${bunVersion} (run ./node_modules/.bin/bun)`);
  const facts = commitFacts();
  mkdirSync(out, { recursive: true });
  log(`airlock ${pkg.version}, commit ${facts.commit}, date ${facts.build_date}, Bun ${bunVersion} → ${out}`);
  const artifacts: Artifact[] = [];
  // What does not depend on the target (help texts, side bundles, …) is recorded once for all targets.
  const inputs = await compileInputs();
  for (const [i, t] of targets.entries()) {
    const executablePath = await runtimeFor(t, bunVersion, log);
    const elf = readElf(executablePath);
    if (elf.elfClass !== 2 || elf.machine !== t.machine || elf.interpreter !== t.interpreter) {
      throw new Error(`${executablePath} is not a ${t.target} runtime (ELF machine ${elf.machine}, interpreter ${elf.interpreter})`);
    }
    log(`[${i + 1}/${targets.length}] compiling ${t.file} (${t.target})…`);
    const embedded = { version: pkg.version, commit: facts.commit, build_date: facts.build_date, bun_version: bunVersion, target: t.target, file: t.file };
    const outfile = join(out, t.file);
    const r = await build({ force: true, outfile, target: t.target, executablePath, define: { AIRLOCK_BUILD: JSON.stringify(JSON.stringify(embedded)) }, inputs });
    chmodSync(outfile, 0o755);
    const a: Artifact = { file: t.file, target: t.target, bytes: statSync(outfile).size, sha256: sha256File(outfile) };
    artifacts.push(a);
    log(`[${i + 1}/${targets.length}] ${t.file}: ${(a.bytes / 1e6).toFixed(1)} MB (runtime ${(statSync(executablePath).size / 1e6).toFixed(1)} MB) in ${(r.ms / 1000).toFixed(1)} s, sha256 ${a.sha256.slice(0, 16)}…`);
  }
  const manifest: ReleaseManifest = { name: "airlock", version: pkg.version, commit: facts.commit, build_date: facts.build_date, bun_version: bunVersion, artifacts };
  copyFileSync(join(ROOT, "scripts", "install.sh"), join(out, "install.sh"));
  chmodSync(join(out, "install.sh"), 0o755);
  const sums = [...artifacts.map((a) => [a.sha256, a.file]), [sha256File(join(out, "install.sh")), "install.sh"]];
  writeFileSync(join(out, "SHA256SUMS"), sums.map(([h, f]) => `${h}  ${f}\n`).join(""));
  writeFileSync(join(out, "release.json"), `${JSON.stringify(manifest, null, 2)}\n`);
  log(`wrote install.sh, SHA256SUMS and release.json`);
  return manifest;
}

if (import.meta.main) {
  const argv = process.argv.slice(2);
  let out: string | undefined;
  const picked: ReleaseTarget[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--out" && argv[i + 1]) out = argv[++i];
    else if (a === "--target" && argv[i + 1]) {
      const name = argv[++i];
      const t = TARGETS.find((x) => x.name === name);
      if (!t) {
        process.stderr.write(`release: unknown target '${name}' (expected ${TARGETS.map((x) => x.name).join(", ")})\n`);
        process.exit(2);
      }
      picked.push(t);
    } else {
      process.stderr.write(`release: unknown argument '${a}'\nusage: bun build/release.ts [--out DIR] [--target ${TARGETS.map((x) => x.name).join("|")}]…\n`);
      process.exit(2);
    }
  }
  const t0 = performance.now();
  try {
    await release({ out, targets: picked.length ? picked : TARGETS, log: (l) => process.stderr.write(`release: ${l}\n`) });
    process.stderr.write(`release: done in ${((performance.now() - t0) / 1000).toFixed(0)} s\n`);
  } catch (e) {
    process.stderr.write(`release: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(1);
  }
}
