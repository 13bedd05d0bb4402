/**
 * @module store/serve-lock
 * One `airlock serve` per data dir: a pid file (`serve.lock`, JSON `{pid, start, url, started_at, schema, mac}`)
 * created atomically (write a temp file made with O_EXCL|O_NOFOLLOW, then `link` it into place, which fails if one exists) and
 * checked for liveness with the owner's pid + start identity (store/owner.ts), so a lock left by a
 * killed server is taken over and a reused pid is not mistaken for it. `airlock run` takes no lock. The server signs
 * its lock with a MAC under the data dir's approver token once it has the tokens, and records its URL once it
 * listens: the client commands find it there ({@link recordedServer}).
 */
import { closeSync, constants, linkSync, lstatSync, openSync, readdirSync, readFileSync, readlinkSync, renameSync, unlinkSync, writeSync } from "node:fs";
import { join } from "node:path";
import { readRegularFile, writersBesidesOwner } from "../config/paths.ts";
import { AirlockError } from "../errors.ts";
import { MIGRATIONS, storageError } from "./db.ts";
import { currentOwner, ownerIsGone } from "./owner.ts";

/** The lock file's name inside the data dir. */
export const SERVE_LOCK_FILE = "serve.lock";

/** The most a lock file is read, bytes (one holds ~200): a larger one is unreadable, set aside like a stale lock. */
export const MAX_SERVE_LOCK_BYTES = 4096;

/** What the lock file holds. `url` is null until the server listens. */
export interface ServeLockInfo {
  pid: number;
  start: string | null;
  url: string | null;
  started_at: string;
  /**
   * The highest SQLite schema version the server's airlock knows (absent in the locks of airlocks before schema
   * version 14): store/open.ts tells an older server, whose writes a long migration would fail, from a current one
   * applying that migration itself (the start waits for it then).
   */
  schema?: number;
  /**
   * {@link serveLockMac} of the lock (its pid, start and url), hex — proof that whoever wrote it knows the data dir's
   * approver token, which no process airlock starts can read (hooks and `danger-full-access` tools can write the data
   * dir). Absent when the server took the lock without the token (and in older airlocks' locks): clients ignore it.
   */
  mac?: string;
}

/** A held lock. `release()` is idempotent and removes the file only while it is still ours. */
export interface ServeLock {
  readonly path: string;
  /**
   * Keys the lock's MAC ({@link serveLockMac}) with `approverToken`, the data dir's approver token, and rewrites it:
   * from then on the client commands trust what it records ({@link recordedServer}).
   */
  sign(approverToken: string): void;
  /**
   * Records the address the server listens on (shown to a second `serve`; the client commands' URL), with the lock's
   * MAC once signed; null takes it out again, before the server closes its listener (a port it gave up can be taken by
   * any local user, and the lock must not send the client commands' tokens there while the server drains).
   */
  setUrl(url: string | null): void;
  release(): void;
}

/**
 * Takes the data dir's serve lock (unsigned: the client commands ignore it until {@link ServeLock.sign}).
 * @throws AirlockError `data_dir_in_use` when a live `airlock serve` holds it (the message names its pid and URL);
 *   `data_dir_unusable` when the lock file cannot be written (read-only or full data dir).
 */
export function acquireServeLock(dataDir: string): ServeLock {
  const path = join(dataDir, SERVE_LOCK_FILE);
  const me = currentOwner();
  const info: ServeLockInfo = { pid: me.pid, start: me.start, url: null, started_at: new Date().toISOString(), schema: Math.max(...MIGRATIONS.map((m) => m.version)) };
  for (let attempt = 0; attempt < 5; attempt++) {
    const tmp = `${path}.${me.pid}.tmp`;
    writeTemp(tmp, JSON.stringify(info));
    try {
      linkSync(tmp, path);
      return held(dataDir, path, info);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw storageError(e, path) ?? e;
    } finally {
      unlinkQuietly(tmp);
    }
    const other = readLock(path);
    if (other === "missing") continue;
    if (other !== "unreadable" && !ownerIsGone({ pid: other.pid, start: other.start })) {
      throw new AirlockError(
        "data_dir_in_use",
        `another airlock serve (pid ${other.pid}, ${other.url ? `listening on ${other.url}` : "starting or stopping"}) already uses the data dir ${dataDir}; ` +
          `stop it first, talk to it (airlock actions list --data-dir ${dataDir}, or its web console: airlock console --data-dir ${dataDir}: they find its URL in ${path}), ` +
          `or start this one with another --data-dir. ` +
          `One SQLite data dir serves one server; several servers need a shared database server, not a shared SQLite file`,
        { pid: other.pid, url: other.url, data_dir: dataDir },
      );
    }
    // stale (its server is gone) or unreadable: move it aside atomically and try again. If another starting
    // server replaced it in between, what was moved is a live lock: put it back (link fails if a third took the place).
    const aside = `${path}.stale.${me.pid}`;
    try {
      renameSync(path, aside);
    } catch {
      continue; // another starting server moved it first
    }
    const moved = readLock(aside);
    if (typeof moved === "object" && !ownerIsGone({ pid: moved.pid, start: moved.start })) {
      try {
        linkSync(aside, path);
      } catch {
        // the place is taken again; the next attempt reads whoever holds it
      }
    }
    try {
      unlinkSync(aside);
    } catch {
      // already gone
    }
  }
  throw new AirlockError("data_dir_in_use", `could not take the serve lock ${path} (other servers are starting on the same data dir); try again`);
}

/**
 * The lock of a live `airlock serve` on `dataDir` other than this process (null when none: missing, unreadable, stale,
 * or ours). store/open.ts refuses a long migration beside it (an older airlock's server: its writes wait 5 s at most).
 */
export function liveServeLock(dataDir: string): ServeLockInfo | null {
  const other = readLock(join(dataDir, SERVE_LOCK_FILE));
  if (typeof other !== "object" || other.pid === process.pid || ownerIsGone({ pid: other.pid, start: other.start })) return null;
  return other;
}

/**
 * What the data dir's `serve.lock` says about a live `airlock serve`, as the client commands trust it
 * ({@link recordedServer}): `listening` at `url` (an `http://HOST:PORT` base, no trailing slash; a wildcard bind
 * given as loopback), `starting` (live, no URL recorded yet), or `none` with why no live server is trusted there.
 */
export type RecordedServer =
  | { state: "listening"; pid: number; url: string; lockPath: string }
  | { state: "starting"; pid: number; lockPath: string }
  | { state: "none"; why: string; lockPath: string };

/**
 * The live `airlock serve` recorded in `dataDir`'s `serve.lock`, for the client commands (`console`, `actions`,
 * `schedule`, `attach`) and `doctor`. The lock is trusted only as the data dir's own files are: read without blocking
 * and never through a symbolic link (`readRegularFile`, at most {@link MAX_SERVE_LOCK_BYTES}), owned by the user
 * airlock runs as, writable by no one else (`writersBesidesOwner`: group write of the owner's private group aside),
 * its `pid` a live process with the recorded start identity (store/owner.ts; a stale lock of a killed server is
 * `none`), its `mac` the {@link serveLockMac} under `approverToken` (the data dir's approver token; null: none usable,
 * so no lock is trusted), and its `url`, when there is one, an `http://HOST:PORT` base on whose port that pid holds a
 * listening socket ({@link listensOn}: a signed lock put back after its server closed its listener is not followed). A wildcard bind (`0.0.0.0`, `[::]`) is given as loopback
 * (`127.0.0.1`, `[::1]`): the server's Host check accepts only loopback names then.
 * @returns never throws: anything else is `none`, with why (for the messages that say where a URL came from).
 */
export function recordedServer(dataDir: string, approverToken: string | null): RecordedServer {
  const lockPath = join(dataDir, SERVE_LOCK_FILE);
  const none = (why: string): RecordedServer => ({ state: "none", why, lockPath });
  let text: string;
  try {
    text = readRegularFile(lockPath, {
      follow: false,
      maxBytes: MAX_SERVE_LOCK_BYTES,
      owner: "self",
      check: (_fd, st) => {
        const who = writersBesidesOwner(st);
        if (who !== undefined) throw Object.assign(new Error(`writable by ${who} (mode 0${(st.mode & 0o7777).toString(8)})`), { code: "EWRITABLE" });
      },
    }).toString("utf8");
  } catch (e) {
    const err = e as NodeJS.ErrnoException & { uid?: number };
    switch (err.code) {
      case "ENOENT":
        return none("no server holds the data dir (no serve.lock)");
      case "EWRITABLE":
        return none(`${lockPath} is ${err.message}, so it is not trusted`);
      case "EOWNER":
        return none(`${lockPath} belongs to uid ${err.uid}, not to the user airlock runs as, so it is not trusted`);
      case "ELOOP":
        return none(`${lockPath} is a symbolic link, so it is not trusted`);
      default:
        return none(`${lockPath} is unreadable (${err.code ?? err.message})`);
    }
  }
  let info: Partial<ServeLockInfo>;
  try {
    info = JSON.parse(text) as Partial<ServeLockInfo>;
  } catch {
    return none(`${lockPath} is not JSON`);
  }
  const pid = info?.pid;
  if (typeof pid !== "number" || !Number.isSafeInteger(pid) || pid <= 0) return none(`${lockPath} names no pid`);
  const start = typeof info.start === "string" ? info.start : null;
  if (ownerIsGone({ pid, start })) return none(`the server ${lockPath} records (pid ${pid}) no longer runs: a stale lock`);
  const recorded = info.url === null || info.url === undefined ? null : info.url;
  if (typeof recorded !== "string" && recorded !== null) return none(`${lockPath} records no URL`);
  if (typeof info.mac !== "string") return none(`${lockPath} carries no MAC (an older airlock's lock, or not written by airlock serve)`);
  if (approverToken === null) return none(`there is no usable approver token in the data dir to check the MAC of ${lockPath} with`);
  if (!sameText(info.mac, serveLockMac(approverToken, dataDir, pid, start, recorded))) {
    return none(`the MAC of ${lockPath} does not match the data dir's approver token: not written by this data dir's airlock serve`);
  }
  if (recorded === null) return { state: "starting", pid, lockPath };
  const url = clientBase(recorded);
  if (url === null) return none(`the URL ${lockPath} records (${JSON.stringify(info.url).slice(0, 80)}) is not an http://HOST:PORT address`);
  // a signed lock says who wrote it, not that its server still listens: a copy kept by whoever can write the data dir
  // and put back while the server drains (pid alive, listener closed) would send the token to whoever took the port
  const port = Number(new URL(url).port);
  const listens = listensOn(pid, port);
  if (listens !== true) return none(`the server ${lockPath} records (pid ${pid}) ${listens === false ? `holds no listening socket on port ${port}` : `cannot be seen to listen on port ${port} (${listens})`}, so its URL is not followed`);
  return { state: "listening", pid, url, lockPath };
}

/**
 * Whether process `pid` holds a TCP socket listening on `port` (any address) in this process's network namespace:
 * a LISTEN row of /proc/self/net/tcp or tcp6 whose socket inode is one of /proc/PID/fd. A string says why it cannot
 * be told (no /proc, another user's process, hidepid): the caller then does not follow the lock.
 */
export function listensOn(pid: number, port: number): boolean | string {
  const rows = listenersOn(port);
  if (rows === null) return "no /proc/self/net/tcp";
  const inodes = new Set(rows.map((r) => r.inode));
  if (inodes.size === 0) return false;
  let fds: string[];
  try {
    fds = readdirSync(`/proc/${pid}/fd`);
  } catch (e) {
    return `/proc/${pid}/fd: ${(e as NodeJS.ErrnoException).code ?? String(e)}`;
  }
  for (const fd of fds) {
    let target: string;
    try {
      target = readlinkSync(`/proc/${pid}/fd/${fd}`);
    } catch {
      continue; // closed meanwhile
    }
    const m = /^socket:\[(\d+)\]$/.exec(target);
    if (m && inodes.has(m[1]!)) return true;
  }
  return false;
}

/**
 * The MAC a server's lock carries: HMAC-SHA-256, keyed with the data dir's approver token, over the data dir (its
 * real path, as cli/context.ts resolves it), the server's pid and start identity and its URL (null until it listens); hex. Whoever can write
 * the data dir without reading the token (a hook, a `danger-full-access` tool: the token is masked for them) cannot
 * make the client commands send their tokens to a URL of theirs.
 */
export function serveLockMac(approverToken: string, dataDir: string, pid: number, start: string | null, url: string | null): string {
  return new Bun.CryptoHasher("sha256", approverToken).update(JSON.stringify({ v: 1, dataDir, pid, start, url })).digest("hex");
}

/** `a === b`, in time independent of where they differ. */
function sameText(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

/** `raw` as an `http://HOST:PORT` base a client can use (wildcard hosts as loopback), or null when it is none. */
function clientBase(raw: unknown): string | null {
  if (typeof raw !== "string") return null;
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    return null;
  }
  if (u.protocol !== "http:" || u.username || u.password || u.search || u.hash || (u.pathname !== "/" && u.pathname !== "") || !u.port) return null;
  const host = u.hostname === "0.0.0.0" ? "127.0.0.1" : u.hostname === "[::]" ? "[::1]" : u.hostname;
  return `http://${host}:${u.port}`;
}

/**
 * The TCP sockets listening on `port` (any address) in this process's network namespace, with their owner's uid and
 * socket inode (/proc/self/net/tcp and tcp6); null when neither table can be read.
 */
export function listenersOn(port: number): { uid: number; inode: string }[] | null {
  const rows: { uid: number; inode: string }[] = [];
  let tables = 0;
  for (const table of ["/proc/self/net/tcp", "/proc/self/net/tcp6"]) {
    let text: string;
    try {
      text = readFileSync(table, "utf8");
    } catch {
      continue; // no IPv6 (or no IPv4) in this namespace
    }
    tables++;
    for (const line of text.split("\n").slice(1)) {
      const f = line.trim().split(/\s+/);
      // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode; LISTEN is 0A; the port is the
      // local address's hex after ':'
      if (f.length < 10 || f[3] !== "0A") continue;
      if (Number.parseInt(f[1]!.slice(f[1]!.lastIndexOf(":") + 1), 16) === port) rows.push({ uid: Number(f[7]), inode: f[9]! });
    }
  }
  return tables === 0 ? null : rows;
}

/**
 * Writes `text` to the new file `tmp` (mode 0600), created with O_CREAT|O_EXCL|O_NOFOLLOW: a file, link or anything else
 * someone put at that name in the data dir is never followed, truncated or written through. A leftover of ours (a
 * regular file of this user: a server with this pid killed mid-write) is removed and the create tried once more;
 * anything else there is refused.
 * @throws AirlockError `data_dir_unusable` when something other than our own leftover is at `tmp` (the message says what,
 *   and that it was left untouched), or the data dir cannot be written (read-only, full).
 */
function writeTemp(tmp: string, text: string): void {
  const flags = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;
  for (let attempt = 0; ; attempt++) {
    let fd: number;
    try {
      fd = openSync(tmp, flags, 0o600);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw storageError(e, tmp) ?? e;
      const what = leftover(tmp);
      if (what === "gone" && attempt === 0) continue;
      if (what === "ours" && attempt === 0) {
        unlinkQuietly(tmp);
        continue;
      }
      throw new AirlockError(
        "data_dir_unusable",
        `the serve lock's temporary file ${tmp} is ${what === "ours" || what === "gone" ? "made again by something else each time airlock removes it" : `already there, ${what}`}; airlock left it untouched and did not start: remove it if nothing of yours made it`,
        { path: tmp },
      );
    }
    try {
      const bytes = Buffer.from(text, "utf8");
      let off = 0;
      while (off < bytes.length) off += writeSync(fd, bytes, off, bytes.length - off);
    } catch (e) {
      closeSync(fd);
      unlinkQuietly(tmp);
      throw storageError(e, tmp) ?? e;
    }
    closeSync(fd);
    return;
  }
}

/**
 * What is at `tmp`: our own leftover (a regular file of this user, not a link: removing its name writes nothing, also
 * when it has other names, as one linked into place by a server killed before it removed the temp), gone, or what else
 * it is (for the refusal).
 */
function leftover(tmp: string): "ours" | "gone" | string {
  let st;
  try {
    st = lstatSync(tmp);
  } catch {
    return "gone";
  }
  if (st.isSymbolicLink()) return "a symbolic link";
  if (!st.isFile()) return "not a regular file";
  if (st.uid !== process.geteuid?.()) return `a file of another user (uid ${st.uid})`;
  return "ours";
}

function unlinkQuietly(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // already gone
  }
}

function readLock(path: string): ServeLockInfo | "missing" | "unreadable" {
  let text: string;
  try {
    // never a blocking open: a FIFO at the lock's place (anyone who can write the data dir, a hook included) would
    // hang the start in open(2); not a regular file is "unreadable", set aside like a stale lock (config/paths.ts)
    text = readRegularFile(path, { maxBytes: MAX_SERVE_LOCK_BYTES }).toString("utf8");
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "ENOENT" ? "missing" : "unreadable";
  }
  try {
    const v = JSON.parse(text) as ServeLockInfo;
    return typeof v.pid === "number" ? v : "unreadable";
  } catch {
    return "unreadable";
  }
}

function held(dataDir: string, path: string, info: ServeLockInfo): ServeLock {
  let released = false;
  let key: string | undefined;
  const ours = () => {
    const cur = readLock(path);
    return typeof cur === "object" && cur.pid === info.pid && cur.start === info.start;
  };
  return {
    path,
    sign(approverToken: string) {
      key = approverToken;
      rewrite();
    },
    setUrl(url: string | null) {
      info.url = url;
      rewrite();
    },
    release() {
      if (released) return;
      released = true;
      try {
        if (ours()) unlinkSync(path);
      } catch {
        // already gone
      }
    },
  };
  /** Writes `info` (with its MAC once signed) through the temp file, while the lock is still ours. */
  function rewrite(): void {
    if (released || !ours()) return;
    if (key !== undefined) info.mac = serveLockMac(key, dataDir, info.pid, info.start, info.url);
    const tmp = `${path}.${info.pid}.tmp`;
    writeTemp(tmp, JSON.stringify(info));
    try {
      renameSync(tmp, path);
    } catch (e) {
      unlinkQuietly(tmp);
      throw storageError(e, path) ?? e;
    }
  }
}
