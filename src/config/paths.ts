/**
 * @module config/paths
 * Where airlock keeps its state (SPEC §2): the data dir and the two bearer tokens in it.
 * Token files are created atomically with mode 0600 and never exist world-readable, not even briefly.
 */
import { closeSync, constants, fchmodSync, fstatSync, fsyncSync, linkSync, lstatSync, mkdirSync, openSync, readFileSync, readlinkSync, readSync, realpathSync, statfsSync, statSync, unlinkSync, writeSync, type Stats } from "node:fs";
import { dirname, isAbsolute, join, resolve } from "node:path";
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
 * @returns the data dir's real path (absolute, links resolved): the folder that was checked, used from then on.
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
  // the folder checked is the folder used: its real path, links resolved, is what every later use opens (a link on
  // the way that another user may change — one they own, or one in a folder they may write — could otherwise be
  // aimed at a folder of theirs once this check passed, and its airlock.yaml read next)
  let real: string;
  try {
    real = realpathSync(dir);
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    throw new AirlockError("usage", `cannot resolve the data dir ${dir} (from ${from}): ${err.code ?? err.message}; pick another with --data-dir or $AIRLOCK_HOME`);
  }
  const st = lstatSync(real);
  if (!st.isDirectory()) {
    throw new AirlockError("usage", `the data dir ${dir} (from ${from}) is not a directory; pick another with --data-dir or $AIRLOCK_HOME`);
  }
  const shown = real === dir ? dir : `${dir} (${real})`;
  const problem = dataDirOwnershipProblem(st) ?? dataDirParentProblem(real);
  if (problem) throw new AirlockError("data_dir_unusable", `the data dir ${shown} (from ${from}) ${problem.text}; ${problem.fix(real)}`);
  return real;
}

/**
 * Why the folders above the data dir's real path `real` would let another user replace it, or undefined: one owned by
 * another user than root or the one airlock runs as, or one its group or others may write without the sticky bit
 * (`/tmp` is fine). Whoever may rename what is in such a folder can move the data dir away and put a folder of theirs
 * (an `airlock.yaml` with hooks, an `airlock.db` that trusts their folders) in its place between the check and a use.
 * Shared by the runtime ({@link resolveDataDir}), `airlock doctor` and the early request (cli/early-request.ts).
 */
export function dataDirParentProblem(real: string): DataDirProblem | undefined {
  const me = process.geteuid?.();
  if (me === undefined) return undefined;
  for (let p = dirname(real); ; p = dirname(p)) {
    const st = lstatSync(p);
    const fix = () => `use a data dir under folders only you (or root) can change, with --data-dir or $AIRLOCK_HOME`;
    if (foreignOwner(st.uid)) return { text: `is in a folder another user may change: ${p} belongs to uid ${st.uid}, who could move the data dir away and put their own in its place`, fix };
    const mode = st.mode & 0o7777;
    const who = (mode & 0o1000) === 0 ? writersBesidesOwner(st) : undefined;
    if (who !== undefined) {
      return { text: `is in a folder others may change: ${p} is writable by ${who} (mode 0${mode.toString(8)}, not sticky), who could move the data dir away and put their own in its place`, fix: () => `chmod go-w ${p} (or chmod +t), or ${fix()}` };
    }
    if (p === dirname(p)) return undefined;
  }
}

/**
 * True when `uid` is neither the effective user airlock runs as nor root: the owner of a file or folder in or above
 * the data dir that airlock refuses, since that user could go on changing it (root may change anything anyway). False
 * when the platform has no uids.
 */
export function foreignOwner(uid: number): boolean {
  const me = process.geteuid?.();
  return me !== undefined && uid !== me && uid !== 0;
}

/** What is wrong with a data dir, and its fix ({@link dataDirOwnershipProblem}, {@link dataDirParentProblem}). */
export interface DataDirProblem {
  text: string;
  fix: (dir: string) => string;
}

/**
 * Why the runtime refuses the data dir at `dir` as it is now ({@link resolveDataDir}'s checks, without creating it):
 * not a folder, {@link dataDirOwnershipProblem} or {@link dataDirParentProblem} of its real path. For `airlock doctor`
 * and the early request. @returns undefined when it is usable or does not exist.
 */
export function dataDirProblem(dir: string): DataDirProblem | undefined {
  let real: string;
  try {
    real = realpathSync(dir);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    return { text: `cannot be resolved (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`, fix: () => "pick another with --data-dir or $AIRLOCK_HOME" };
  }
  const st = lstatSync(real);
  if (!st.isDirectory()) return { text: "is not a directory", fix: () => "remove it, or pick another data dir with --data-dir or $AIRLOCK_HOME" };
  return dataDirOwnershipProblem(st) ?? dataDirParentProblem(real);
}

/**
 * Why a data dir (its `stat`, links followed) may not be used: owned by another user than the one airlock runs as, or
 * writable by its group or others (sticky or not: whoever may create files there could put an `airlock.yaml` with
 * hooks of their own, or, without the sticky bit, replace `airlock.db` with one that trusts their folders). Its
 * owner, or they, could then run commands as this user, or answer this user's cards. Shared by the runtime
 * ({@link resolveDataDir}) and `airlock doctor`.
 * @returns undefined when the folder is this user's and not writable by others; else the problem and its fix.
 */
export function dataDirOwnershipProblem(st: Stats): DataDirProblem | undefined {
  const me = process.geteuid?.();
  if (me !== undefined && st.uid !== me) {
    return { text: `belongs to uid ${st.uid}, not to the user airlock runs as (uid ${me}): its owner could change what airlock reads there`, fix: () => "use a data dir of your own with --data-dir or $AIRLOCK_HOME" };
  }
  const mode = st.mode & 0o7777;
  const who = writersBesidesOwner(st);
  if (who !== undefined) {
    return { text: `is writable by ${who} (mode 0${mode.toString(8)}): they could put files there that airlock reads`, fix: (dir) => `chmod go-w ${dir} (airlock creates its data dir with mode 0700), or pick another with --data-dir` };
  }
  return undefined;
}

/**
 * Who besides its owner may write a file or folder, from its `stat`: `"its group"`, `"other users"`, both, or
 * undefined for no one. Group write does not count when the group is the owner's *private group* — the user-private-group
 * scheme Debian and Ubuntu use (`USERGROUPS_ENAB`, umask 002: an editor saves `airlock.yaml` as 0664), recognised as a
 * group with the owner's uid as its gid, that is airlock's own group, that `/etc/group` lists with no members on every
 * line of that gid (a second line of the same gid with members, even a commented one, makes it shared) and that no other
 * account in `/etc/passwd` has as its primary group; a NIS `+`/`-` line in either file, a group password, gshadow members
 * or admins (where airlock can read gshadow) and group services besides files and systemd in nsswitch.conf are doubt. A group known only to another name service (LDAP, …), or
 * any doubt, counts as others (fail closed).
 */
export function writersBesidesOwner(st: Stats): string | undefined {
  const mode = st.mode & 0o7777;
  const group = (mode & 0o020) !== 0 && !isPrivateGroupOf(st.gid, st.uid);
  const others = (mode & 0o002) !== 0;
  return group && others ? "its group and other users" : group ? "its group" : others ? "other users" : undefined;
}

function isPrivateGroupOf(gid: number, uid: number): boolean {
  if (gid !== uid || gid !== process.getegid?.()) return false;
  try {
    if (!groupsFromFilesOnly()) return false;
    const groups = readRegularFile("/etc/group", { maxBytes: 16 << 20 }).toString("utf8").split("\n");
    const accounts = readRegularFile("/etc/passwd", { maxBytes: 16 << 20 }).toString("utf8").split("\n");
    // NIS compat lines (`+…`, `-…`) bring in groups and members this file does not show: in doubt
    if ([...groups, ...accounts].some((l) => /^\s*[+-]/.test(l))) return false;
    // every line with this gid (a second line of the same gid, or a commented one, counts too): none may list members
    const entries = groups.map((l) => l.split(":")).filter((f) => f.length >= 3 && f[2]!.trim() !== "" && Number(f[2]) === gid);
    if (entries.length === 0 || entries.some((f) => f.length < 4 || f.slice(3).join(":").trim() !== "")) return false;
    // newgrp lets in whoever knows a group password, and gshadow's members and admins (who may add themselves)
    if (entries.some((f) => !lockedGroupPassword(f[1]!, true))) return false;
    if (!gshadowPrivate(new Set(entries.map((f) => f[0]!.replace(/^#/, "").trim())))) return false;
    return !accounts.map((l) => l.split(":")).some((f) => f.length >= 4 && Number(f[3]) === gid && Number(f[2]) !== uid);
  } catch {
    return false;
  }
}

/**
 * Whether `/etc/nsswitch.conf` takes groups (and initgroups, the supplementary groups of a login) only from `files` and
 * `systemd` (Ubuntu's default; its userdb records are root's): another service (`ldap`, `sss`, `nis`, `compat`, …) may
 * give a user the gid as a supplementary group under any name, which /etc/group does not show. No nsswitch.conf is
 * glibc's default, files. Anything unreadable is doubt.
 */
function groupsFromFilesOnly(): boolean {
  let text: string;
  try {
    text = readRegularFile("/etc/nsswitch.conf", { maxBytes: 1 << 20 }).toString("utf8");
  } catch (e) {
    return (e as { code?: string }).code === "ENOENT";
  }
  return text.split("\n").every((line) => {
    const m = /^\s*(group|initgroups)\s*:(.*)$/.exec(line.replace(/#.*/, ""));
    if (!m) return true;
    return m[2]!.replace(/\[[^\]]*\]/g, " ").trim().split(/\s+/).every((service) => service === "files" || service === "systemd");
  });
}

/** Whether a group password field lets no one in by password: empty, locked (`!`, `*`), or `x` (see gshadow) in /etc/group. */
function lockedGroupPassword(field: string, inGroupFile: boolean): boolean {
  const p = field.trim();
  return p === "" || p.startsWith("!") || p.startsWith("*") || (inGroupFile && p === "x");
}

/**
 * `/etc/gshadow` where airlock may read it (root): every line of these group names lists no members, no admins and no
 * usable password (newgrp takes gshadow's members over /etc/group's, and an admin may add anyone). Unreadable (not root:
 * it is root:shadow 0640) leaves /etc/group's word, which gpasswd and usermod keep in step with it; any other failure
 * is doubt.
 */
function gshadowPrivate(names: Set<string>): boolean {
  let text: string;
  try {
    text = readRegularFile("/etc/gshadow", { maxBytes: 16 << 20 }).toString("utf8");
  } catch (e) {
    const code = (e as { code?: string }).code;
    return code === "EACCES" || code === "ENOENT";
  }
  return !text.split("\n").map((l) => l.split(":")).some((f) => names.has(f[0]!.replace(/^#/, "").trim()) && (f.length < 4 || !lockedGroupPassword(f[1]!, false) || f.slice(2).join("").trim() !== ""));
}

/** The two bearer tokens and their files. */
export interface Tokens {
  /** `Authorization: Bearer <apiToken>` for every HTTP route but `/health`, `/server-proof` and the console's page files. */
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
 * 0600 and a warning goes to `warn` (default: stderr). Each file is read through one descriptor opened without
 * blocking ({@link readRegularFile}).
 * @throws AirlockError `config_invalid` when a token file exists but is empty, larger than
 *   {@link MAX_TOKEN_FILE_BYTES}, not a regular file, or owned by another user than the one airlock runs as.
 */
export function ensureTokens(dataDir: string, opts: { warn?: (msg: string) => void } = {}): Tokens {
  const warn = opts.warn ?? ((msg: string) => process.stderr.write(`airlock: warning: ${msg}\n`));
  const apiTokenPath = join(dataDir, API_TOKEN_FILE);
  const approverTokenPath = join(dataDir, APPROVER_TOKEN_FILE);
  const apiToken = ensureTokenFile(apiTokenPath, warn);
  const approverToken = ensureTokenFile(approverTokenPath, warn);
  // one token for both (approver-token a link to api-token, or a copy): whoever may call the API — a tool process
  // with the API token in reach, the console link — could then answer the cards that need user proof
  if (apiToken === approverToken) {
    throw new AirlockError("config_invalid", `the approver token ${approverTokenPath} is the API token (${apiTokenPath}): it would prove nothing the API token does not; delete ${approverTokenPath} and a new one will be created`);
  }
  return { apiToken, approverToken, apiTokenPath, approverTokenPath };
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

/**
 * Why airlock refuses a token file ({@link ensureTokens}; `airlock doctor` reports the same): not a regular file,
 * owned by another user than the one airlock runs as (whoever owns it knows the token, or chose it), a link (symbolic,
 * or a hard link / a file reached through one) to a file others can read (they may know its contents; tightening it
 * would change that other file), larger than {@link MAX_TOKEN_FILE_BYTES}, blank, or unreadable.
 */
export type TokenFileProblem =
  | { code: "ENOTREG" }
  | { code: "EOWNER"; uid: number }
  | { code: "ELINKED"; mode: number }
  | { code: "EFBIG" }
  | { code: "EMPTY" }
  | { code: "EUNREADABLE"; message: string };

/**
 * Reads the token file `path` through one descriptor opened without blocking ({@link readRegularFile}), following a
 * link. `tighten`, when given, is called with that descriptor for this user's own single-link file whose mode is wider
 * than 0600 (the only change ever made, and only by {@link ensureTokens}). Never throws.
 * @returns the trimmed token, `missing` when there is no file, or what is wrong with it.
 */
function readTokenFile(path: string, tighten?: (fd: number, mode: number) => void): { token: string } | { missing: true } | { problem: TokenFileProblem } {
  let bytes: Buffer;
  try {
    bytes = readRegularFile(path, {
      maxBytes: MAX_TOKEN_FILE_BYTES,
      owner: "self",
      check: (fd, st) => {
        const mode = st.mode & 0o777;
        if ((mode & 0o077) === 0) return;
        // Readable by others and not this data dir's own file (reached through a symbolic link, or a hard link
        // of a file kept elsewhere): whoever made the link chose a file whose contents they may know (a
        // world-readable file of this user; as root any 0644 root file, e.g. /etc/hostname), and tightening it
        // would change the mode of that other file (as root: chmod 600 /etc/passwd). Refused, nothing changed.
        const l = lstatSync(path);
        if (l.isSymbolicLink() || l.dev !== st.dev || l.ino !== st.ino || st.nlink > 1) throw Object.assign(fileError("ELINKED", `${path} is a link to a file other users can read`), { mode });
        tighten?.(fd, mode);
      },
    });
  } catch (e) {
    const err = e as NodeJS.ErrnoException & { uid?: number; mode?: number };
    switch (err.code) {
      case "ENOENT":
        return { missing: true };
      case "EISDIR":
      case "ENOTREG":
        return { problem: { code: "ENOTREG" } };
      case "EOWNER":
        return { problem: { code: "EOWNER", uid: err.uid ?? -1 } };
      case "ELINKED":
        return { problem: { code: "ELINKED", mode: err.mode ?? 0 } };
      case "EFBIG":
        return { problem: { code: "EFBIG" } };
      default:
        return { problem: { code: "EUNREADABLE", message: err.message } };
    }
  }
  const token = bytes.toString("utf8").trim();
  return token.length === 0 ? { problem: { code: "EMPTY" } } : { token };
}

/**
 * What is wrong with the token file `path`, as {@link ensureTokens} would find it, without changing anything (for
 * `airlock doctor`). A file that is only too widely readable is no problem here: the runtime tightens it.
 * @returns undefined when the file is usable or missing.
 */
export function tokenFileProblem(path: string): TokenFileProblem | undefined {
  const r = readTokenFile(path);
  return "problem" in r ? r.problem : undefined;
}

/**
 * Returns the token in `path`, or undefined when the file does not exist ({@link readTokenFile}). A file with
 * permissions wider than 0600 is tightened through the descriptor it was read by (`fchmod`), with a warning.
 * @throws AirlockError `config_invalid` for any {@link TokenFileProblem}.
 */
function readExisting(path: string, warn: (msg: string) => void): string | undefined {
  const r = readTokenFile(path, (fd, mode) => {
    fchmodSync(fd, 0o600);
    warn(`${path} was accessible to other users (mode ${mode.toString(8).padStart(4, "0")}); tightened it to 0600. Consider replacing the token: delete the file and run 'airlock token'.`);
  });
  if ("token" in r) return r.token;
  if ("missing" in r) return undefined;
  const p = r.problem;
  switch (p.code) {
    case "ENOTREG":
      throw new AirlockError("config_invalid", `the token file ${path} is not a regular file; remove it and a new token will be created`);
    case "EOWNER":
      throw new AirlockError("config_invalid", `the token file ${path} belongs to uid ${p.uid}, not to the user airlock runs as (uid ${process.geteuid?.()}): whoever owns it knows the token and could answer your cards with it; remove it (a new token will be created) or use a data dir of your own with --data-dir`);
    case "ELINKED":
      throw new AirlockError("config_invalid", `the token file ${path} is a link to a file other users can read (mode ${p.mode.toString(8).padStart(4, "0")}): they may know its contents, so it is no token; remove the link (a new token will be created)`);
    case "EFBIG":
      throw new AirlockError("config_invalid", `the token file ${path} is larger than ${MAX_TOKEN_FILE_BYTES} bytes, so it holds no token airlock made; delete it and run 'airlock token' to create a new one`);
    case "EMPTY":
      throw new AirlockError("config_invalid", `the token file ${path} is empty; delete it and run 'airlock token' to create a new one`);
    case "EUNREADABLE":
      throw new AirlockError("config_invalid", `cannot read the token file ${path}: ${p.message}`);
    default: {
      const never: never = p;
      throw new AirlockError("internal", `unknown token file problem ${JSON.stringify(never)}`);
    }
  }
}

/**
 * A token as a client reads it at the moment it needs it (`airlock attach` and `airlock acp` answering a proof card):
 * never created, and `null` when it is missing, unreadable, empty, not a regular file (a FIFO there never blocks),
 * larger than {@link MAX_TOKEN_FILE_BYTES}, or owned by another user than the one airlock runs as. Never throws.
 * @returns the trimmed token, or null.
 */
export function readTokenIfUsable(path: string): string | null {
  try {
    return readRegularFile(path, { maxBytes: MAX_TOKEN_FILE_BYTES, owner: "self" }).toString("utf8").trim() || null;
  } catch {
    return null;
  }
}

/**
 * The most `airlock.yaml` (or a `--config` file) may hold, bytes: 1 MiB, as Claude Code's settings files (config/
 * claude-settings.ts). A config is written by hand — the largest shipped example is a few KiB, and even hundreds of
 * rules and hooks stay far below — while a sparse or endless file put at its path would stall every command reading it
 * (and the YAML parser holds several copies of its text).
 */
export const MAX_CONFIG_FILE_BYTES = 1 << 20;

/** A token file airlock writes holds 65 bytes; larger ones (up to this, bytes) are read for tokens set by hand. */
export const MAX_TOKEN_FILE_BYTES = 4096;

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

/** What {@link readRegularFile} checks beyond "a regular file". */
export interface RegularFileOptions {
  /** Follow a symbolic link at `path` (default true); false opens with `O_NOFOLLOW` (a link is `ELOOP`). */
  follow?: boolean;
  /** Refuse a file larger than this many bytes (`EFBIG`): its size is checked before the read, and the read stops past it. */
  maxBytes?: number;
  /** `"self"`: refuse a file not owned by the effective user airlock runs as (`EOWNER`). */
  owner?: "self";
  /** Refuse a file group or others may write (`EWRITABLE`). */
  notWritableByOthers?: boolean;
  /** Runs after the checks above, before the read, with the open descriptor and its `fstat`; may throw. */
  check?: (fd: number, st: Stats) => void;
}

/**
 * Reads a whole file, never blocking: it is opened with `O_NONBLOCK` (and `O_NOCTTY`), checked with `fstat` on that
 * same descriptor and read only when it is a regular file, so a FIFO, a device or a socket put there — also one
 * swapped in after a check by path — cannot hang the process. Used for the files a user names (`airlock.yaml`, a
 * recipe), the tokens, and the early request's cache and key.
 * @param opts see {@link RegularFileOptions}; defaults: follow links, any size, any owner.
 * @returns the file's bytes.
 * @throws NodeJS.ErrnoException from the open or read (`ENOENT`, `EACCES`, `ELOOP` for a link when not followed, …);
 *   code `EISDIR` for a folder, `ENOTREG` for anything else that is not a regular file (a kernel pseudo file too: under
 *   `/proc` or `/sys`, or on procfs, sysfs, debugfs, … mounted anywhere, found by statfs of the path before the open,
 *   then by the descriptor's real path and file system: never read), `EFBIG` over `maxBytes`,
 *   `EOWNER` for another owner (with its `uid`), `EWRITABLE` for a group- or other-writable file.
 */
export function readRegularFile(path: string, opts: RegularFileOptions = {}): Buffer {
  const flags = constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY | (opts.follow === false ? constants.O_NOFOLLOW : 0);
  // Not opened at all when it is no regular file now: opening a device has effects of its own (a link the model put in
  // a workspace to /dev/watchdog arms the host's watchdog when airlock runs as root; a FIFO's open releases a writer
  // waiting on it). The fstat below still decides, on the descriptor: a swap after this check is refused there.
  const pre = opts.follow === false ? lstatSync(path) : statSync(path);
  if (!pre.isFile() && !(opts.follow === false && pre.isSymbolicLink())) {
    const code = pre.isDirectory() ? "EISDIR" : "ENOTREG";
    throw fileError(code, `${path} is not a regular file`);
  }
  // nor one of another owner (which this user often may not open anyway: EACCES would hide why it is refused)
  if (opts.owner === "self" && pre.isFile()) ownedBySelf(path, pre);
  // nor a kernel pseudo file (some opens have effects too: tracefs's `trace` stops tracing while it is open for reading)
  const pseudoNamed = pre.isFile() ? pseudoFileNamed(path) : undefined;
  if (pseudoNamed !== undefined) throw fileError("ENOTREG", `${path} is a kernel pseudo file (${pseudoNamed}), not a regular file`);
  const fd = openSync(path, flags);
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) {
      const code = st.isDirectory() ? "EISDIR" : "ENOTREG";
      throw fileError(code, `${path} is not a regular file`);
    }
    const pseudo = pseudoFileAt(fd);
    if (pseudo !== undefined) throw fileError("ENOTREG", `${path} is a kernel pseudo file (${pseudo}), not a regular file`);
    if (opts.maxBytes !== undefined && st.size > opts.maxBytes) throw fileError("EFBIG", `${path} is larger than ${opts.maxBytes} bytes`);
    if (opts.owner === "self") ownedBySelf(path, st);
    if (opts.notWritableByOthers && (st.mode & 0o022) !== 0) throw fileError("EWRITABLE", `${path} is writable by group or others`);
    opts.check?.(fd, st);
    return opts.maxBytes === undefined ? readFileSync(fd) : readAtMost(fd, path, opts.maxBytes, st.size);
  } finally {
    closeSync(fd);
  }
}

/** Where the kernel's pseudo filesystems are usually mounted (procfs, sysfs and what is mounted under it: debugfs, tracefs, cgroup). */
const PSEUDO_ROOTS = ["/proc/", "/sys/"];

/**
 * The kernel's pseudo filesystems by their `statfs` f_type (linux/magic.h), wherever they are mounted: a second
 * procfs (`mount -t proc proc /host/proc`, a monitoring container's `-v /proc:/host/proc`), a bind mount of `/sys`
 * or of one file of it, debugfs or tracefs mounted outside `/sys`. Their files are "regular" to fstat but made by the
 * kernel on each read (and some reads consume them); none of them holds a file someone wrote for airlock to read.
 */
const PSEUDO_FS_TYPES = new Map<number, string>([
  [0x9fa0, "proc"],
  [0x62656572, "sysfs"],
  [0x64626720, "debugfs"],
  [0x74726163, "tracefs"],
  [0x73636673, "securityfs"],
  [0x62656570, "configfs"],
  [0x27e0eb, "cgroup"],
  [0x63677270, "cgroup2"],
  [0xcafe4a11, "bpf"],
  [0xde5e81e4, "efivarfs"],
  [0x6165676c, "pstore"],
  [0x42494e4d, "binfmt_misc"],
  [0x65735543, "fusectl"],
  [0xf97cff8c, "selinuxfs"],
  [0x43415d53, "smackfs"],
  [0x19800202, "mqueue"],
  [0x6e736673, "nsfs"],
]);

/** The pseudo filesystem (its name: "proc", "sysfs", "tracefs", …) that `path` (links followed) lies on, by `statfs`; undefined for any other or when statfs fails. */
export function pseudoFsOf(path: string): string | undefined {
  try {
    return PSEUDO_FS_TYPES.get(Number(statfsSync(path).type) >>> 0);
  } catch {
    return undefined;
  }
}

/**
 * Says where the file open at `fd` is when it is a kernel pseudo file — its real path under {@link PSEUDO_ROOTS}, or a
 * file system of {@link PSEUDO_FS_TYPES} wherever it is mounted (statfs of `/proc/self/fd/N`, which follows the
 * descriptor to the very file opened) — else undefined (also when `/proc` is not mounted: then no procfs file can be
 * open). Such files are "regular" to fstat (size 0 or 4096) but made by the kernel on each read, and some reads take
 * what they return: as root, `/proc/kmsg` hands over kernel log lines that syslog then never gets, and tracefs's
 * `trace_pipe` consumes trace records. A link the model writes in a workspace (`.claude/settings.json`, a script a
 * shell call names: card/bound-files.ts) or one put in a folder airlock reads must not make airlock read them.
 * @returns e.g. `/proc/kmsg`, or `/host/proc/kmsg on proc` outside {@link PSEUDO_ROOTS}.
 */
export function pseudoFileAt(fd: number): string | undefined {
  let real: string;
  try {
    real = readlinkSync(`/proc/self/fd/${fd}`);
  } catch {
    return undefined;
  }
  if (PSEUDO_ROOTS.some((root) => real.startsWith(root))) return real;
  const fs = pseudoFsOf(`/proc/self/fd/${fd}`);
  return fs === undefined ? undefined : `${real} on ${fs}`;
}

/**
 * The same by name, before any open (links followed): a pseudo file is then not even opened. The check on the
 * opened descriptor ({@link pseudoFileAt}) still decides; this one only spares the open.
 */
export function pseudoFileNamed(path: string): string | undefined {
  const fs = pseudoFsOf(path);
  if (fs === undefined) return undefined;
  let real = path;
  try {
    real = realpathSync(path);
  } catch {
    // named as given
  }
  return PSEUDO_ROOTS.some((root) => real.startsWith(root)) ? real : `${real} on ${fs}`;
}

/**
 * The check {@link readRegularFile} runs on the data dir's own `airlock.yaml` (config/load.ts; the early request's key
 * too): it chooses hooks and MCP servers, commands run as this user, so it is read only when no other user may change
 * it — owned by the user airlock runs as or root, and not writable by its group or others. A file another user put in
 * the data dir while it was open to them (refused since: {@link dataDirOwnershipProblem}) stays theirs after
 * `chmod go-w DIR`.
 * @throws `EOWNER` (with its `uid`) for another owner, `EWRITABLE` (with its `mode`) for a group- or other-writable file.
 */
export function dataDirConfigCheck(path: string, st: Stats): void {
  if (foreignOwner(st.uid)) throw Object.assign(fileError("EOWNER", `${path} belongs to uid ${st.uid}, not to the user airlock runs as (uid ${process.geteuid?.()}) or root`), { uid: st.uid });
  const mode = st.mode & 0o7777;
  const who = writersBesidesOwner(st);
  if (who !== undefined) throw Object.assign(fileError("EWRITABLE", `${path} is writable by ${who} (mode 0${mode.toString(8)})`), { mode });
}

/** @throws `EOWNER` (with its `uid`) when `st` is not owned by the effective user airlock runs as. */
function ownedBySelf(path: string, st: Stats): void {
  const me = process.geteuid?.();
  if (me === undefined || st.uid !== me) throw Object.assign(fileError("EOWNER", `${path} belongs to uid ${st.uid}, not to the user airlock runs as (uid ${me ?? "unknown"})`), { uid: st.uid });
}

/**
 * Reads `fd` to its end, refusing (`EFBIG`) once more than `max` bytes came: a file that grows while it is read, or one
 * whose size fstat does not tell (size 0 in /proc, a FUSE file), ends at the cap, never at the memory's end. `size` (the
 * fstat size) sizes the first buffer one byte past it, so a file that kept its size takes two reads, as `readFileSync`.
 * Exported for its test (a size-less file: `readRegularFile` itself refuses /proc's).
 * @throws `EFBIG` past `max`; whatever `readSync` throws.
 */
export function readAtMost(fd: number, path: string, max: number, size: number): Buffer {
  let buf = Buffer.allocUnsafe(Math.min(max + 1, size > 0 ? size + 1 : 64 << 10));
  let total = 0;
  for (;;) {
    if (total === buf.length) {
      const grown = Buffer.allocUnsafe(Math.min(max + 1, buf.length * 2));
      buf.copy(grown, 0, 0, total);
      buf = grown;
    }
    const n = readSync(fd, buf, total, buf.length - total, null);
    if (n === 0) return buf.subarray(0, total);
    total += n;
    if (total > max) throw fileError("EFBIG", `${path} is larger than ${max} bytes`);
  }
}

function fileError(code: string, message: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`${code}: ${message}`), { code });
}
