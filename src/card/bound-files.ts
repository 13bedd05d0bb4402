/**
 * @module card/bound-files
 * Binds an approval to what runs (issue 12 item 10): the content hashes (sha256) of the workspace files
 * a call names (which ones: gate/named-files.ts). A card shows them; just before the allowed call runs,
 * the gate hashes them again and a change refuses the call as `approval_stale`.
 */
import { constants as FS, type Stats } from "node:fs";
import { lstat, open, readlink } from "node:fs/promises";
import path from "node:path";
import { FileBinding } from "../bus/events.ts";
import { resolveRealPath } from "../launcher/resolve.ts";
import { pseudoFileAt, pseudoFileNamed } from "../config/paths.ts";
import { assertNever } from "../errors.ts";

/** Largest file hashed, bytes (256 MiB). A bigger named file cannot be bound: the call is refused. */
export const BIND_MAX_BYTES = 256 * 1024 * 1024;
/** Bytes read per chunk while hashing (1 MiB); each chunk is an async read, so the event loop never blocks on a big file. */
export const BIND_CHUNK_BYTES = 1024 * 1024;
/** Most files bound per call (the first ones named). */
export const BIND_MAX_FILES = 16;

/** One named file as it was when hashed: its schema is with the card's, in bus/events.ts. */
export { FileBinding };

/** A file a call names: `rel` (workspace-relative, shown on the card) and `abs` (absolute, lexical: symlinks not followed). */
export interface NamedFile {
  rel: string;
  abs: string;
}

/**
 * Hashes each named file as it is now (see {@link FileBinding}). Never follows a symlink swapped in for a
 * regular file unnoticed (lstat first; the open of a regular file uses `O_NOFOLLOW` and must be the same inode),
 * never opens a FIFO, device or socket, and reads in {@link BIND_CHUNK_BYTES} async chunks.
 * @param workspace the session's workspace, absolute (symlinked components on the way are resolved to its real path).
 * @param signal stops hashing between chunks (rejects with the signal's reason).
 */
export async function bindFiles(files: NamedFile[], workspace: string, signal?: AbortSignal): Promise<FileBinding[]> {
  const root = safeReal(workspace) ?? workspace;
  const out: FileBinding[] = [];
  for (const f of files) {
    const at = path.join(root, f.rel);
    const b = await bindOne(f, at, signal);
    // a folder on the way swapped for a symlink (`sub` → /etc) changes where the call lands, not the file's own entry
    const parent = safeReal(path.dirname(at));
    if (parent !== null && parent !== path.dirname(at)) b.parent = parent;
    out.push(b);
  }
  return out;
}

async function bindOne(f: NamedFile, at: string, signal?: AbortSignal): Promise<FileBinding> {
  let st: Stats;
  try {
    st = await lstat(at);
  } catch {
    return { path: f.rel, kind: "missing" };
  }
  if (st.isSymbolicLink()) {
    const link = await readlink(at).catch(() => "");
    const target = await hashOpen(at, false, undefined, signal);
    return { path: f.rel, kind: "symlink", link, ...(target.kind === "file" ? { size: target.size, sha256: target.sha256 } : {}) };
  }
  if (!st.isFile()) return { path: f.rel, kind: "other" };
  if (st.size > BIND_MAX_BYTES) return { path: f.rel, kind: "too_large", size: st.size };
  const h = await hashOpen(at, true, st, signal);
  switch (h.kind) {
    case "file":
      return { path: f.rel, kind: "file", size: h.size, sha256: h.sha256 };
    case "too_large":
      return { path: f.rel, kind: "too_large", size: h.size };
    case "other":
      return { path: f.rel, kind: "other" };
    default:
      return assertNever(h, "hash result");
  }
}

type Hashed = { kind: "file"; size: number; sha256: string } | { kind: "too_large"; size: number } | { kind: "other" };

/**
 * Opens without blocking on a FIFO, checks it is a regular file (and the lstat'd inode when `expect` is given), hashes it in chunks.
 * A kernel pseudo file (`/proc`, `/sys`, procfs or sysfs mounted elsewhere: config/paths.ts `pseudoFileAt`) is "other",
 * never read and, when seen by name, never opened: a link the model put in the workspace (`x.sh -> /proc/kmsg`, then
 * `sh x.sh`) would otherwise have airlock, as root, consume kernel log lines (or tracefs's `trace_pipe` records) to hash them.
 */
async function hashOpen(at: string, noFollow: boolean, expect: Stats | undefined, signal?: AbortSignal): Promise<Hashed> {
  if (pseudoFileNamed(at) !== undefined) return { kind: "other" };
  let fh;
  try {
    fh = await open(at, FS.O_RDONLY | FS.O_NONBLOCK | (noFollow ? FS.O_NOFOLLOW : 0));
  } catch {
    return { kind: "other" };
  }
  try {
    const st = await fh.stat();
    if (!st.isFile() || (expect && (st.ino !== expect.ino || st.dev !== expect.dev))) return { kind: "other" };
    if (pseudoFileAt(fh.fd) !== undefined) return { kind: "other" };
    if (st.size > BIND_MAX_BYTES) return { kind: "too_large", size: st.size };
    const hash = new Bun.CryptoHasher("sha256"); // not node:crypto: not loaded at start (docs/performance.md)
    const buf = Buffer.allocUnsafe(BIND_CHUNK_BYTES);
    let size = 0;
    for (;;) {
      signal?.throwIfAborted();
      const { bytesRead } = await fh.read(buf, 0, buf.length, null);
      if (bytesRead === 0) break;
      size += bytesRead;
      if (size > BIND_MAX_BYTES) return { kind: "too_large", size };
      hash.update(buf.subarray(0, bytesRead));
    }
    return { kind: "file", size, sha256: hash.digest("hex") };
  } finally {
    await fh.close();
  }
}

function safeReal(p: string): string | null {
  try {
    return resolveRealPath("/", p);
  } catch {
    return null;
  }
}

/** The bindings that differ between two hashings of the same named files (by position), with a one-line description each. */
export function changedFiles(before: FileBinding[], after: FileBinding[]): string[] {
  const out: string[] = [];
  for (let k = 0; k < Math.max(before.length, after.length); k++) {
    const a = before[k];
    const b = after[k];
    if (a && b && sameBinding(a, b)) continue;
    out.push(`${(b ?? a)!.path}: ${describe(a)} → ${describe(b)}`);
  }
  return out;
}

function sameBinding(a: FileBinding, b: FileBinding): boolean {
  return a.path === b.path && a.kind === b.kind && a.sha256 === b.sha256 && a.size === b.size && a.link === b.link && a.parent === b.parent;
}

/** A binding in a few words, e.g. `sha256 3a7b…(12 bytes)`, `missing`, `symlink → /etc/passwd`. */
export function describe(b: FileBinding | undefined): string {
  if (!b) return "not named";
  if (b.parent !== undefined) return `${describe({ ...b, parent: undefined })} in ${b.parent}`;
  switch (b.kind) {
    case "file":
      return `sha256 ${b.sha256!.slice(0, 12)}… (${b.size} bytes)`;
    case "missing":
      return "missing";
    case "symlink":
      return `symlink → ${b.link}${b.sha256 ? ` (sha256 ${b.sha256.slice(0, 12)}…)` : ""}`;
    case "other":
      return "not a regular file";
    case "too_large":
      return `too large to hash (${b.size} bytes)`;
    default:
      return assertNever(b.kind, "file binding");
  }
}
