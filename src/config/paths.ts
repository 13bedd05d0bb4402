/**
 * @module config/paths
 * Where airlock keeps its state (SPEC §2): the data dir and the two bearer tokens in it.
 * Token files are created atomically with mode 0600 and never exist world-readable, not even briefly.
 */
import { chmodSync, closeSync, constants, fstatSync, fsyncSync, linkSync, mkdirSync, openSync, readFileSync, statSync, unlinkSync, writeSync } from "node:fs";
import { isAbsolute, join, resolve } from "node:path";
import { AirlockError } from "../errors.ts";

/** File names of the two tokens inside the data dir. */
export const API_TOKEN_FILE = "api-token";
export const APPROVER_TOKEN_FILE = "approver-token";

/**
 * The folder of session transcripts inside the data dir (`<dataDir>/transcripts/<session_id>.jsonl`,
 * store/transcript.ts): hidden from tool processes and MCP servers, readable by hooks (launcher/setup.ts).
 */
export const TRANSCRIPTS_DIR = "transcripts";

/** Where the data dir came from (for messages). */
export type DataDirSource = "flag" | "AIRLOCK_HOME" | "XDG_DATA_HOME" | "home";

/**
 * Picks the data dir without touching the filesystem: `--data-dir`, else `$AIRLOCK_HOME`, else
 * `$XDG_DATA_HOME/airlock` (only if absolute, as the XDG Base Directory spec requires), else
 * `~/.local/share/airlock` (home from `$HOME`, else the OS account's home).
 * @returns an absolute path (relative flags/env values resolve against the cwd) and its source.
 */
export function pickDataDir(opts: { flag?: string; env: Record<string, string | undefined> }): { dir: string; source: DataDirSource } {
  const { flag, env } = opts;
  if (flag) return { dir: resolve(flag), source: "flag" };
  if (env.AIRLOCK_HOME) return { dir: resolve(env.AIRLOCK_HOME), source: "AIRLOCK_HOME" };
  if (env.XDG_DATA_HOME && isAbsolute(env.XDG_DATA_HOME)) return { dir: join(env.XDG_DATA_HOME, "airlock"), source: "XDG_DATA_HOME" };
  const home = env.HOME && isAbsolute(env.HOME) ? env.HOME : accountHome();
  return { dir: join(home, ".local", "share", "airlock"), source: "home" };
}

/**
 * The OS account's home (`os.homedir()`), with `node:os` loaded only when asked: `airlock run`'s early request
 * picks the data dir before its first model request, and loading `node:os` there cost about 1.4M instructions
 * for a home `$HOME` nearly always gives (docs/performance.md, issue 20).
 */
function accountHome(): string {
  return (import.meta.require("node:os") as typeof import("node:os")).homedir();
}

/**
 * Resolves the data dir (see `pickDataDir` for the order) and creates it, with mode 0700, if missing.
 * An existing directory is used as it is (its mode is not changed).
 * @returns the absolute path of the data dir.
 * @throws AirlockError `usage` when the path exists but is not a directory, or cannot be created.
 */
export function resolveDataDir(opts: { flag?: string; env: Record<string, string | undefined> }): string {
  const { dir, source } = pickDataDir(opts);
  const from = source === "flag" ? "--data-dir" : source === "home" ? "the default location" : `$${source}`;
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    throw new AirlockError("usage", `cannot create the data dir ${dir} (from ${from}): ${err.code ?? err.message}; pick another with --data-dir or $AIRLOCK_HOME`);
  }
  const st = statSync(dir);
  if (!st.isDirectory()) {
    throw new AirlockError("usage", `the data dir ${dir} (from ${from}) is not a directory; pick another with --data-dir or $AIRLOCK_HOME`);
  }
  return dir;
}

/** The two bearer tokens and their files. */
export interface Tokens {
  /** `Authorization: Bearer <apiToken>` for every HTTP route but `/health`. */
  apiToken: string;
  /** `X-Airlock-Approver: <approverToken>`: user proof for allowing calls that need it. */
  approverToken: string;
  apiTokenPath: string;
  approverTokenPath: string;
}

/**
 * Reads the API and approver tokens from the data dir, creating each missing one as 32 random bytes
 * in hex (64 chars). New files are written under a temporary name opened with `O_EXCL` and mode 0600,
 * then hard-linked into place (so a concurrent reader sees no file or the whole token, and two racing
 * processes agree on one token). An existing file with permissions wider than 0600 is tightened to
 * 0600 and a warning goes to `warn` (default: stderr).
 * @throws AirlockError `config_invalid` when a token file exists but is empty or not a regular file.
 */
export function ensureTokens(dataDir: string, opts: { warn?: (msg: string) => void } = {}): Tokens {
  const warn = opts.warn ?? ((msg: string) => process.stderr.write(`airlock: warning: ${msg}\n`));
  const apiTokenPath = join(dataDir, API_TOKEN_FILE);
  const approverTokenPath = join(dataDir, APPROVER_TOKEN_FILE);
  return {
    apiToken: ensureTokenFile(apiTokenPath, warn),
    approverToken: ensureTokenFile(approverTokenPath, warn),
    apiTokenPath,
    approverTokenPath,
  };
}

function ensureTokenFile(path: string, warn: (msg: string) => void): string {
  const existing = readExisting(path, warn);
  if (existing !== undefined) return existing;
  createToken(path);
  // Read back what is there: ours, or the token of a process that won a race to create it.
  const created = readExisting(path, warn);
  if (created !== undefined) return created;
  throw new AirlockError("internal", `could not create the token file ${path}; check the data dir's permissions`);
}

/** Returns the token in `path`, or undefined when the file does not exist. */
function readExisting(path: string, warn: (msg: string) => void): string | undefined {
  let st;
  try {
    st = statSync(path);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw new AirlockError("config_invalid", `cannot read the token file ${path}: ${(e as Error).message}`);
  }
  if (!st.isFile()) {
    throw new AirlockError("config_invalid", `the token file ${path} is not a regular file; remove it and a new token will be created`);
  }
  const mode = st.mode & 0o777;
  if ((mode & 0o077) !== 0) {
    chmodSync(path, 0o600);
    warn(`${path} was accessible to other users (mode ${mode.toString(8).padStart(4, "0")}); tightened it to 0600. Consider replacing the token: delete the file and run 'airlock token'.`);
  }
  const token = readFileSync(path, "utf8").trim();
  if (token.length === 0) {
    throw new AirlockError("config_invalid", `the token file ${path} is empty; delete it and run 'airlock token' to create a new one`);
  }
  return token;
}

/** Creates the token file atomically (0600 from the first byte); does nothing if another process created it first. */
function createToken(path: string): void {
  const tmp = `${path}.tmp-${process.pid}-${randomHex(6)}`;
  const fd = openSync(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | (constants.O_NOFOLLOW ?? 0), 0o600);
  try {
    writeSync(fd, `${randomHex(32)}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  try {
    linkSync(tmp, path); // fails with EEXIST if another process won the race; never overwrites
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "EEXIST") {
      unlinkSync(tmp);
      throw e;
    }
  }
  unlinkSync(tmp);
}

/** `n` random bytes as lowercase hex (Web Crypto: node:crypto is not loaded at start, docs/performance.md). */
function randomHex(n: number): string {
  return Buffer.from(crypto.getRandomValues(new Uint8Array(n))).toString("hex");
}

/**
 * Reads a whole file the user names (`airlock.yaml`, a recipe), following links but never blocking: it is opened
 * with `O_NONBLOCK` and read only when it is a regular file, so a FIFO, a device or a socket put there cannot hang
 * the command.
 * @returns the file's bytes.
 * @throws NodeJS.ErrnoException from the open or read (`ENOENT`, `EACCES`, …); code `EISDIR` for a folder and
 *   `ENOTREG` for anything else that is not a regular file.
 */
export function readRegularFile(path: string): Buffer {
  const fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY);
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) {
      const code = st.isDirectory() ? "EISDIR" : "ENOTREG";
      throw Object.assign(new Error(`${code}: ${path} is not a regular file`), { code });
    }
    return readFileSync(fd);
  } finally {
    closeSync(fd);
  }
}
