/**
 * @module launcher/git-meta
 * Repository metadata in writable roots (SPEC §9, security-model "Repository metadata"): finds every
 * `.git` entry (folder, file or symlink, any depth, name matched case-insensitively) and every
 * repository-shaped folder (HEAD + objects/ + refs/, or HEAD + commondir: git discovers it as a git folder), so
 * the launcher can pin the existing ones with mounts before a confined process runs and quarantine
 * whatever appeared or was replaced after it ends. The scan caches the directory tree per root. It never
 * holds the event loop for long (it yields every {@link YIELD_MS} ms), reads at most a bounded number of
 * folders per scan, and runs one at a time per root.
 */
import { chmodSync, lstatSync, mkdirSync, readdirSync, readFileSync, renameSync, rmdirSync, unlinkSync, writeFileSync, type Stats } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { AirlockError } from "../errors.ts";

/** A `.git` name, matched case-insensitively. */
export const DOT_GIT = /^\.git$/i;
/**
 * Marks a name airlock gave a quarantined entry. Such folders are scanned like any other (a process can
 * give a folder this name too, to hide a repository in it); one a scan has just made is not flagged again.
 */
export const QUARANTINE_MARK = ".airlock-quarantine-";
/**
 * Paths inside a repository's git folder that decide what the host's git runs or where it looks:
 * bound read-only when present; created during a call, they are quarantined.
 */
export const GIT_SENSITIVE = ["config", "config.worktree", "hooks", "info", "commondir", "gitdir", "worktrees", "modules"] as const;

/** One repository-metadata entry found by {@link scanGitMeta}. */
export interface GitMetaEntry {
  /** Absolute path: the `.git` entry, or a repository-shaped folder. */
  path: string;
  /** `dotgit-dir` / `dotgit-file` / `dotgit-link`: an entry named `.git`; `bare`: a repository-shaped folder not named `.git`. */
  kind: "dotgit-dir" | "dotgit-file" | "dotgit-link" | "bare";
  /** Inode number (as a string, to compare). */
  ino: string;
  /** For folders: true when it holds HEAD, objects/ and refs/ (a repository git would use). */
  repo: boolean;
  /** For folders: which {@link GIT_SENSITIVE} names it holds (lower case). */
  sensitive: string[];
  /** For folders: true when it is empty. */
  empty: boolean;
}

interface DirStamp {
  ino: number;
  /** ctime in ms with its sub-ms fraction: ctime, unlike mtime, cannot be set from inside. */
  ctimeMs: number;
  /** Re-read on the next scan even if unchanged: its ctime was too close to the read to trust (coarse clocks). */
  recent: boolean;
  /** Child folders to descend into (not `.git`, not git's own folders of a repository-shaped one, not symlinks). */
  subdirs: string[];
  /** `.git` children of this folder, and whether the folder itself is repository-shaped. */
  gitChildren: { name: string; kind: GitMetaEntry["kind"] }[];
  bare: boolean;
}

/** Per root: folder path → what was read there. */
const treeCache = new Map<string, Map<string, DirStamp>>();
/** A ctime closer than this (ms) to the moment of reading is re-read next time (coarse file-system clocks). */
const RECENT_MS = 2000;

function lstatOrNull(p: string): Stats | null {
  try {
    return lstatSync(p);
  } catch {
    return null;
  }
}

/**
 * Folders inside a repository-shaped folder that are git's own (a bare repository's layout): the scan
 * does not descend into them, as it does not descend into `.git` folders. Other folders there are scanned.
 */
const GIT_LAYOUT = new Set(["objects", "refs", "logs", "hooks", "info", "worktrees", "modules", "branches"]);

type Entry = { name: string; dir: boolean; file: boolean; link: boolean };

function readEntries(dir: string): Entry[] {
  return readdirSync(dir, { withFileTypes: true }).map((d) => ({ name: d.name, dir: d.isDirectory(), file: d.isFile(), link: d.isSymbolicLink() }));
}

/**
 * The entries of `dir` ([] when unreadable). With `repairModes` (the check after a call), a folder the
 * process left unreadable to its owner (git needs only to traverse it, so a repository can hide behind
 * `chmod 111`) gets its owner's `rwx` back so it can be read; as root the scan reads it anyway.
 */
function names(dir: string, repairModes = false): Entry[] {
  try {
    return readEntries(dir);
  } catch (e) {
    if (!repairModes || (e as NodeJS.ErrnoException).code !== "EACCES") return [];
  }
  try {
    giveOwnerRwx(dir);
    return readEntries(dir);
  } catch {
    return [];
  }
}

/**
 * Adds the owner's `rwx` to the folder `dir` (never through a symlink: an MCP server still runs while
 * its calls are checked). Throws when `dir` is not a folder or cannot be changed (another owner).
 */
function giveOwnerRwx(dir: string): void {
  const st = lstatSync(dir);
  if (!st.isDirectory()) throw new Error(`${dir} is not a folder`);
  chmodSync(dir, (st.mode & 0o7777) | 0o700);
}

/**
 * True when a folder listing is one git would take for a git folder (names case-insensitive): HEAD
 * (file or symlink) with objects/ and refs/ (folders or symlinks), or HEAD with a `commondir` file (a linked worktree's git
 * folder, whose objects and refs live in the common one).
 */
function repoShaped(list: Entry[]): boolean {
  const has = (n: string, ok: (e: { dir: boolean; file: boolean; link: boolean }) => boolean) => list.some((e) => e.name.toLowerCase() === n && ok(e));
  if (!has("head", (e) => e.file || e.link)) return false;
  // git follows symbolic links to objects/ and refs/, so a link counts as a folder here.
  return (has("objects", (e) => e.dir || e.link) && has("refs", (e) => e.dir || e.link)) || has("commondir", (e) => e.file || e.link);
}

function readStamp(dir: string, st: Stats, repairModes: boolean): DirStamp {
  const before = Date.now();
  const list = names(dir, repairModes);
  const bare = repoShaped(list);
  const gitChildren: DirStamp["gitChildren"] = [];
  const subdirs: string[] = [];
  for (const e of list) {
    if (DOT_GIT.test(e.name)) {
      gitChildren.push({ name: e.name, kind: e.link ? "dotgit-link" : e.dir ? "dotgit-dir" : "dotgit-file" });
    } else if (e.dir && !(bare && GIT_LAYOUT.has(e.name.toLowerCase()))) {
      subdirs.push(e.name);
    }
  }
  return { ino: st.ino, ctimeMs: st.ctimeMs, recent: st.ctimeMs + RECENT_MS > before, subdirs, gitChildren, bare };
}

function folderFacts(p: string, repairModes: boolean): Pick<GitMetaEntry, "repo" | "sensitive" | "empty"> {
  const list = names(p, repairModes);
  const sens = new Set<string>(GIT_SENSITIVE);
  return { repo: repoShaped(list), sensitive: list.map((e) => e.name.toLowerCase()).filter((n) => sens.has(n)).sort(), empty: list.length === 0 };
}

/** Default bound on the folders one scan visits (config `sandbox_scan_max_folders`). */
export const DEFAULT_SCAN_MAX_FOLDERS = 200_000;
/** A scan gives the event loop back after this much work (ms), so `airlock serve` keeps answering. */
export const YIELD_MS = 5;

const yieldToLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

/** What one walk of a root found; `complete` is false when it stopped at `maxFolders` (entries then cover only part of the tree). */
interface Walk {
  entries: GitMetaEntry[];
  complete: boolean;
}

function byPath(a: GitMetaEntry, b: GitMetaEntry): number {
  return a.path < b.path ? -1 : a.path > b.path ? 1 : 0;
}

/**
 * One walk of `root` (see {@link scanGitMeta}): gives the event loop back every {@link YIELD_MS} ms and
 * stops after `maxFolders` folders. Callers hold the root's turn ({@link exclusive}).
 */
async function walk(root: string, maxFolders: number, repairModes: boolean): Promise<Walk> {
  let cache = treeCache.get(root);
  if (!cache) treeCache.set(root, (cache = new Map()));
  const seen = new Set<string>();
  const out: GitMetaEntry[] = [];
  const stack = [root];
  let slice = performance.now();
  while (stack.length > 0) {
    if (performance.now() - slice >= YIELD_MS) {
      await yieldToLoop();
      slice = performance.now();
    }
    const dir = stack.pop()!;
    const st = lstatOrNull(dir);
    if (!st || !st.isDirectory()) continue;
    if (seen.size >= maxFolders) return { entries: out.sort(byPath), complete: false };
    seen.add(dir);
    let stamp = cache.get(dir);
    if (!stamp || stamp.recent || stamp.ino !== st.ino || stamp.ctimeMs !== st.ctimeMs) {
      stamp = readStamp(dir, st, repairModes);
      cache.set(dir, stamp);
    }
    if (stamp.bare && !DOT_GIT.test(path.basename(dir))) {
      out.push({ path: dir, kind: "bare", ino: String(st.ino), ...folderFacts(dir, repairModes) });
    }
    for (const g of stamp.gitChildren) {
      const p = path.join(dir, g.name);
      const gs = lstatOrNull(p);
      if (!gs) continue;
      const kind: GitMetaEntry["kind"] = gs.isSymbolicLink() ? "dotgit-link" : gs.isDirectory() ? "dotgit-dir" : "dotgit-file";
      const facts = kind === "dotgit-dir" ? folderFacts(p, repairModes) : { repo: false, sensitive: [], empty: false };
      out.push({ path: p, kind, ino: String(gs.ino), ...facts });
    }
    for (const s of stamp.subdirs) stack.push(path.join(dir, s));
  }
  for (const k of cache.keys()) {
    if (!seen.has(k)) cache.delete(k);
    if (performance.now() - slice >= YIELD_MS) {
      await yieldToLoop();
      slice = performance.now();
    }
  }
  return { entries: out.sort(byPath), complete: true };
}

/** Per root: the tail of the queue of scans waiting for it (one scan of a root at a time: its cache, its locks). */
const rootQueues = new Map<string, Promise<void>>();

/** Runs `fn` once every earlier caller for `root` is done (a per-root mutex; `fn`'s errors pass through). */
async function exclusive<T>(root: string, fn: () => Promise<T>): Promise<T> {
  const prev = rootQueues.get(root) ?? Promise.resolve();
  let release!: () => void;
  const tail = prev.then(() => new Promise<void>((resolve) => (release = resolve)));
  rootQueues.set(root, tail);
  await prev;
  try {
    return await fn();
  } finally {
    release();
    if (rootQueues.get(root) === tail) rootQueues.delete(root);
  }
}

/** The error for a root whose tree is over the scan's bound (see {@link prepareGitMeta}). */
function tooManyFolders(root: string, maxFolders: number, why: string, notes: string[]): AirlockError {
  const also = notes.length > 0 ? ` Quarantined meanwhile: ${notes.join("; ")}` : "";
  return new AirlockError(
    "metadata_scan_limit",
    `workspace-write refused: ${why}: the workspace ${root} has more than ${maxFolders} folders (sandbox_scan_max_folders), so airlock cannot check its repository metadata. ` +
      `Remove folders there (build output, dependencies), raise sandbox_scan_max_folders, or run under read-only.${also}`,
    { root, max_folders: maxFolders },
  );
}

/**
 * Every repository-metadata entry under `root` (an absolute real path), root itself included when it
 * is repository-shaped. Does not follow symlinks, does not descend into `.git` folders, git's own
 * folders of a repository-shaped one (`objects/`, `refs/`, `logs/`, …: {@link GIT_LAYOUT}); other
 * folders inside a repository-shaped one are scanned, and so are quarantined ones. Cost: the first scan of a root reads every folder; later scans
 * `lstat` each cached folder and read only those whose inode or ctime changed (or whose ctime was
 * too recent to trust), descending fully into new folders. Gives the event loop back every
 * {@link YIELD_MS} ms; scans of one root run one at a time. Unreadable folders are skipped.
 * @param maxFolders bound on the folders visited (default {@link DEFAULT_SCAN_MAX_FOLDERS}).
 * @returns entries sorted by path.
 * @throws AirlockError `metadata_scan_limit` when the tree has more than `maxFolders` folders.
 */
export function scanGitMeta(root: string, maxFolders = DEFAULT_SCAN_MAX_FOLDERS): Promise<GitMetaEntry[]> {
  return exclusive(root, async () => {
    const w = await walk(root, maxFolders, false);
    if (!w.complete) throw tooManyFolders(root, maxFolders, "the scan stopped at its bound", []);
    return w.entries;
  });
}

/** Forgets the cached tree of every root (tests; measuring the first scan). */
export function clearGitMetaCache(): void {
  treeCache.clear();
}

/** The mounts a writable root needs before a confined process runs: see {@link planGitMeta}. */
export interface GitMetaPlan {
  /** Repository git folders bound onto themselves read-write: a mount point cannot be renamed or removed (EBUSY). */
  mountPoints: string[];
  /** Existing paths bound read-only: `.git` files, non-repository `.git` folders, the sensitive parts of repositories. */
  readOnly: string[];
  /** A missing or empty `.git` of the root itself: locked with an empty read-only tmpfs. */
  locked: string[];
}

/**
 * What to mount for `entries` (from {@link scanGitMeta}) of `root`. A repository folder (a `.git` folder
 * with HEAD, objects/ and refs/, or a bare one) becomes a mount point, with its {@link GIT_SENSITIVE}
 * parts read-only (`hooks/` and `info/` are created on the host first when missing, as git's own layout
 * has them, so they can be bound); a `.git` file, or a `.git` folder git would not use, is bound read-only
 * whole; a `.git` symlink is left to the scan after the call. The root's `.git` when missing, or an
 * empty folder (a mount point left by a crashed run, or useless anyway), is locked. Creates folders only
 * inside existing repository folders.
 */
export function planGitMeta(root: string, entries: GitMetaEntry[]): GitMetaPlan {
  const plan: GitMetaPlan = { mountPoints: [], readOnly: [], locked: [] };
  const rootGit = entries.find((e) => e.kind !== "bare" && path.dirname(e.path) === root);
  if (!rootGit) plan.locked.push(path.join(root, ".git"));
  for (const e of entries) {
    if (e.kind === "dotgit-link") continue;
    if (e.kind === "dotgit-file") {
      plan.readOnly.push(e.path);
      continue;
    }
    if (e === rootGit && e.empty) {
      plan.locked.push(e.path);
      continue;
    }
    if (!e.repo) {
      plan.readOnly.push(e.path);
      continue;
    }
    for (const d of ["hooks", "info"]) {
      if (!e.sensitive.includes(d)) {
        try {
          mkdirSync(path.join(e.path, d));
          e.sensitive = [...e.sensitive, d].sort();
        } catch {
          // a file of that name, or no permission: the scan after the call still sees a change
        }
      }
    }
    plan.mountPoints.push(e.path);
    for (const s of e.sensitive) plan.readOnly.push(path.join(e.path, s));
  }
  return plan;
}

/** Empty `.git` folders locked by calls still running in this process: path → number of calls. */
const liveLocks = new Map<string, number>();

/** Registers locks taken for a call (see {@link releaseLocks}). */
export function holdLocks(locked: string[]): void {
  for (const p of locked) liveLocks.set(p, (liveLocks.get(p) ?? 0) + 1);
}

/**
 * Drops a call's locks and removes each lock's empty mount point from the host once no other call of
 * this process holds it (removing it earlier would detach the mount in that call's namespace).
 */
export function releaseLocks(locked: string[]): void {
  for (const p of locked) {
    const n = (liveLocks.get(p) ?? 1) - 1;
    if (n > 0) {
      liveLocks.set(p, n);
      continue;
    }
    liveLocks.delete(p);
    try {
      rmdirSync(p);
    } catch {
      // not empty (quarantined by the check that follows), or gone
    }
  }
}

function quarantineName(p: string): string {
  const stamp = new Date().toISOString().replace(/[-:]/g, "").replace(/\..*$/, "");
  for (let i = 0; ; i++) {
    const q = `${p}${QUARANTINE_MARK}${stamp}${i ? `-${i}` : ""}`;
    if (!lstatOrNull(q)) return q;
  }
}

function quarantine(p: string, root: string, why: string, renamed: Set<string>): string {
  const rel = (x: string) => path.relative(root, x) || ".";
  try {
    const q = quarantineName(p);
    try {
      renameSync(p, q);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EACCES") throw e;
      // The process made the folder holding it read-only (chmod 555): give its owner write back.
      giveOwnerRwx(path.dirname(p));
      renameSync(p, q);
    }
    renamed.add(q);
    return `${why}: ${rel(p)} was renamed to ${rel(q)} (a person can rename it back after checking its config and hooks)`;
  } catch (e) {
    return `${why}: ${rel(p)} could NOT be quarantined (${(e as Error).message}); do not run git in ${rel(path.dirname(p))} before checking it`;
  }
}

/** What {@link quarantineNewGitMeta} did: one line per quarantined entry, and whether the whole tree was checked. */
export interface QuarantineReport {
  notes: string[];
  /** False when a scan stopped at its bound of folders: what lies in the folders not visited was not checked. */
  complete: boolean;
}

/**
 * Compares `root` now with `before` (its entries when the process started) and quarantines, by renaming
 * to `<name>.airlock-quarantine-<UTC stamp>`: every `.git` entry that is new, moved here or replaced
 * (other inode or kind); every sensitive part newly made inside a repository folder; the HEAD of a
 * folder newly made repository-shaped. Empty `.git` folders still locked by a live call of this
 * process are left alone. Waits for other scans of `root`; gives the event loop back every
 * {@link YIELD_MS} ms. Never throws.
 * @param maxFolders bound on the folders each scan visits; past it the report is not `complete`.
 * @returns one line per quarantined (or unquarantinable) entry, for the tool result's warning.
 */
export function quarantineNewGitMeta(root: string, before: GitMetaEntry[], skip?: (e: GitMetaEntry) => boolean, maxFolders = DEFAULT_SCAN_MAX_FOLDERS): Promise<QuarantineReport> {
  return exclusive(root, () => checkSince(root, before, skip, maxFolders));
}

/** {@link quarantineNewGitMeta} for a caller that holds the root's turn. */
async function checkSince(root: string, before: GitMetaEntry[], skip: ((e: GitMetaEntry) => boolean) | undefined, maxFolders: number): Promise<QuarantineReport> {
  const old = new Map(before.map((e) => [e.path, e]));
  const notes: string[] = [];
  const renamed = new Set<string>();
  let complete = true;
  // A folder whose HEAD was quarantined is no longer repository-shaped: scan again, so what it held
  // inside git's own folders (not scanned while it was repository-shaped) is checked in this call.
  for (let pass = 0; ; pass++) {
    const r = await quarantinePass(root, old, notes, renamed, maxFolders, skip);
    if (!r.complete) complete = false;
    if (!r.peeled) break;
    if (pass + 1 >= MAX_PASSES) {
      complete = false; // still peeling: what the last folder held was not checked
      break;
    }
  }
  return { notes, complete };
}

/** Bound on {@link quarantineNewGitMeta}'s scans (each one after the first peels one folder made repository-shaped). */
const MAX_PASSES = 64;

/** One scan of {@link quarantineNewGitMeta}; appends to `notes`. `peeled`: it quarantined a repository-shaped folder's HEAD. */
async function quarantinePass(
  root: string,
  old: Map<string, GitMetaEntry>,
  notes: string[],
  renamed: Set<string>,
  maxFolders: number,
  skip?: (e: GitMetaEntry) => boolean,
): Promise<{ peeled: boolean; complete: boolean }> {
  let peeled = false;
  const w = await walk(root, maxFolders, true);
  let slice = performance.now();
  for (const e of w.entries) {
    if (performance.now() - slice >= YIELD_MS) {
      await yieldToLoop();
      slice = performance.now();
    }
    const was = old.get(e.path);
    if (renamed.has(e.path) || skip?.(e)) continue;
    if (e.kind === "dotgit-dir" && e.empty && liveLocks.has(e.path)) continue;
    const same = was !== undefined && was.ino === e.ino && was.kind === e.kind;
    if (e.kind === "bare") {
      if (same && was.repo) {
        for (const s of e.sensitive) if (!was.sensitive.includes(s)) notes.push(quarantine(path.join(e.path, s), root, "repository metadata created during the call", renamed));
        continue;
      }
      const head = names(e.path, true).find((n) => n.name.toLowerCase() === "head");
      if (head) {
        const headPath = path.join(e.path, head.name);
        notes.push(quarantine(headPath, root, "a folder was made into a git repository during the call", renamed));
        if (!lstatOrNull(headPath)) peeled = true;
      }
      continue;
    }
    if (!same) {
      notes.push(quarantine(e.path, root, was ? "repository metadata replaced during the call" : "repository metadata created or moved during the call", renamed));
      continue;
    }
    if (e.kind === "dotgit-dir") {
      if (!was.repo && e.repo) {
        notes.push(quarantine(e.path, root, "a .git folder was made into a repository during the call", renamed));
        continue;
      }
      for (const s of e.sensitive) if (!was.sensitive.includes(s)) notes.push(quarantine(path.join(e.path, s), root, "repository metadata created during the call", renamed));
    }
  }
  return { peeled, complete: w.complete };
}

/**
 * Journals of running workspace-write calls: one JSON file per call (`{root, pid, start, before}`) in
 * airlock's own `<tmpdir>/airlock-gitmeta-<uid>/` (0700; a confined process's `/tmp` is private, so it
 * cannot reach them). A call's journal is written before its process starts and removed after the check
 * that follows it; one left by a process that is gone (`kill -9` of airlock mid-call) lets the next call
 * on that root run the check the dead call never ran ({@link prepareGitMeta}).
 */
function journalDir(): string | undefined {
  const uid = process.getuid?.() ?? -1;
  const dir = path.join(tmpdir(), `airlock-gitmeta-${uid}`);
  try {
    mkdirSync(dir, { mode: 0o700 });
  } catch {
    // exists already (checked below)
  }
  const st = lstatOrNull(dir);
  // Another user's folder or a link in its place: keep no journal there.
  if (!st || !st.isDirectory() || st.uid !== uid || (st.mode & 0o077) !== 0) return undefined;
  return dir;
}

/** The start time of `pid` (clock ticks since boot, /proc/<pid>/stat field 22), or null when it is gone or a zombie. */
function startTime(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return f[0] === "Z" || f[0] === "X" ? null : (f[19] ?? null);
  } catch {
    return null;
  }
}

const rootKey = (root: string) => new Bun.CryptoHasher("sha256").update(root).digest("hex").slice(0, 16);
let journalSeq = 0;

/**
 * Records that a call on `root` starts with `before` (from {@link scanGitMeta}). Returns the journal's
 * path for {@link closeJournal}, or undefined when none could be written (the call still runs).
 */
export function openJournal(root: string, before: GitMetaEntry[]): string | undefined {
  const dir = journalDir();
  if (!dir) return undefined;
  const file = path.join(dir, `${rootKey(root)}-${process.pid}-${++journalSeq}.json`);
  try {
    writeFileSync(file, JSON.stringify({ root, pid: process.pid, start: startTime(process.pid), before }), { mode: 0o600, flag: "wx" });
    return file;
  } catch {
    return undefined;
  }
}

/** Removes a call's journal once the check after it ran. Never throws. */
export function closeJournal(file: string | undefined): void {
  if (!file) return;
  try {
    unlinkSync(file);
  } catch {
    // gone already
  }
}

/**
 * Checks a call still owes (one whose check after it was incomplete), per root: each compares the root
 * with that call's `before` at the next call on the root ({@link prepareGitMeta}); its journal stays
 * on disk meanwhile, so another airlock recovers it should this one end.
 */
const owed = new Map<string, { before: GitMetaEntry[]; journal?: string }[]>();

/** An empty `.git` of the root itself: a killed call's lock mount point, left to the lock (not quarantined). */
const emptyRootGit = (root: string) => (e: GitMetaEntry) => e.kind === "dotgit-dir" && e.empty && path.dirname(e.path) === root;

/**
 * For a caller holding the root's turn: runs the checks `root` is owed, first those of this process
 * (incomplete earlier checks), then those of calls of an airlock process that is gone (its journal's pid
 * gone, or reused by a process started at another time), each against that call's `before`, and
 * removes the journals of those that completed. Returns one line per quarantined entry.
 * @throws AirlockError `metadata_scan_limit` while a check stays incomplete (it stays owed).
 */
async function recoverOwed(root: string, maxFolders: number): Promise<string[]> {
  const notes: string[] = [];
  let incomplete = false;
  const mine = owed.get(root) ?? [];
  owed.delete(root);
  const still: typeof mine = [];
  for (const o of mine) {
    const r = await checkSince(root, o.before, emptyRootGit(root), maxFolders);
    notes.push(...r.notes.map((l) => `after an earlier call whose check was incomplete: ${l}`));
    if (r.complete) closeJournal(o.journal);
    else still.push(o);
  }
  if (still.length > 0) {
    owed.set(root, [...still, ...(owed.get(root) ?? [])]);
    incomplete = true;
  }
  const dir = journalDir();
  let files: string[] = [];
  try {
    if (dir) files = readdirSync(dir).filter((n) => n.startsWith(`${rootKey(root)}-`) && n.endsWith(".json"));
  } catch {
    files = [];
  }
  for (const n of files) {
    const file = path.join(dir!, n);
    let j: { root?: unknown; pid?: unknown; start?: unknown; before?: unknown };
    try {
      j = JSON.parse(readFileSync(file, "utf8"));
    } catch {
      continue;
    }
    if (j.root !== root || typeof j.pid !== "number" || !Array.isArray(j.before)) continue;
    const alive = j.pid === process.pid || (startTime(j.pid) !== null && startTime(j.pid) === j.start);
    if (alive) continue;
    const r = await checkSince(root, j.before as GitMetaEntry[], emptyRootGit(root), maxFolders);
    notes.push(...r.notes.map((l) => `after an airlock process ended during a call: ${l}`));
    if (r.complete) closeJournal(file);
    else incomplete = true;
  }
  if (incomplete) throw tooManyFolders(root, maxFolders, "an earlier call's repository-metadata check is still owed and cannot complete", notes);
  return notes;
}

/** What {@link prepareGitMeta} found and did for one root. */
export interface GitMetaPrepared {
  /** The entries found before the call (compared after it). */
  before: GitMetaEntry[];
  plan: GitMetaPlan;
  /** This call's journal ({@link openJournal}), or undefined when none could be written. */
  journal?: string;
  /** Lines for what owed checks quarantined (see {@link prepareGitMeta}). */
  recovered: string[];
}

/**
 * Before a `workspace-write` call on `root`, as one step no other scan of `root` interleaves with: runs
 * the checks the root is owed, scans it, plans its mounts ({@link planGitMeta}), holds its locks
 * ({@link holdLocks}) and writes the call's journal. Gives the event loop back every {@link YIELD_MS} ms.
 * @param maxFolders bound on the folders each scan visits (config `sandbox_scan_max_folders`).
 * @throws AirlockError `metadata_scan_limit` when the tree has more than `maxFolders` folders, or an
 * owed check cannot complete: the call must not run (what it planted could not be told from what was there).
 */
export function prepareGitMeta(root: string, maxFolders = DEFAULT_SCAN_MAX_FOLDERS): Promise<GitMetaPrepared> {
  return exclusive(root, async () => {
    const recovered = await recoverOwed(root, maxFolders);
    const w = await walk(root, maxFolders, false);
    if (!w.complete) throw tooManyFolders(root, maxFolders, "the scan before the call stopped at its bound", recovered);
    const plan = planGitMeta(root, w.entries);
    holdLocks(plan.locked);
    const journal = openJournal(root, w.entries);
    return { before: w.entries, plan, journal, recovered };
  });
}

/**
 * After a call on `root` (or between an MCP server's calls): with `release`, drops the call's locks
 * ({@link releaseLocks}); then {@link quarantineNewGitMeta} against `before`. With `release`, a complete
 * check removes the call's journal; an incomplete one keeps it and leaves the check owed: the next call
 * on `root` runs it first and is refused while it cannot complete. Never throws.
 */
export function finishGitMeta(root: string, before: GitMetaEntry[], maxFolders: number, release?: { locked: string[]; journal?: string }): Promise<QuarantineReport> {
  return exclusive(root, async () => {
    if (release) releaseLocks(release.locked);
    const r = await checkSince(root, before, undefined, maxFolders);
    if (release && r.complete) closeJournal(release.journal);
    else if (release) owed.set(root, [...(owed.get(root) ?? []), { before, journal: release.journal }]);
    return r;
  });
}
