/**
 * @module tool/files
 * The host-side file tools (`developer__read_file`, `write_file`, `edit_file`, `list_dir`). Every path
 * is resolved to its real target first (symlinks followed component by component, missing tail kept),
 * and the checks judge that real path under the call's sandbox policy (SPEC §4, §9). airlock's data
 * dir is refused outright (`data_dir_refused`). Files are opened without following a last-component
 * link and without blocking (`O_NOFOLLOW | O_NONBLOCK`), the opened fd must be a regular file (a folder
 * for `list_dir`) at the very path that was checked, and reads are capped and honour the call's signal.
 */
import { constants as FS, lstatSync, mkdirSync, readlinkSync } from "node:fs";
import { lstat, open, readdir, unlink, type FileHandle } from "node:fs/promises";
import path from "node:path";
import { z } from "zod";
import { AirlockError } from "../errors.ts";
import { insideDataDir } from "../launcher/credentials.ts";
import type { SandboxPolicy } from "../launcher/policy.ts";
import { isInside, resolveRealPath } from "../launcher/resolve.ts";
import { defineTool, renameClaudeFields, type ToolContext } from "./tool.ts";
import editDescription from "./files-edit.txt" with { type: "text" };
import listDescription from "./files-list.txt" with { type: "text" };
import readDescription from "./files-read.txt" with { type: "text" };
import writeDescription from "./files-write.txt" with { type: "text" };

/** Most entries `list_dir` returns. */
export const MAX_DIR_ENTRIES = 2000;

/** A workspace-relative path that stays read-only under `workspace-write`: `.git`, `.git/hooks/**`, `.git/config` at any depth. */
const PROTECTED = /(^|\/)\.git($|\/hooks($|\/)|\/config$)/;

interface Resolved {
  /** The real path the operation will touch. */
  real: string;
  /** The workspace's real path. */
  root: string;
  inside: boolean;
}

function resolveFor(ctx: ToolContext, p: string): Resolved {
  const root = resolveRealPath("/", ctx.session.workspace);
  const real = resolveRealPath(root, p);
  refuseDataDir(ctx, real, root, p);
  return { real, root, inside: isInside(real, root) };
}

/** Throws `data_dir_refused` when `real` (or the spelling of `p`) lies in airlock's data dir: every policy, every mode. */
function refuseDataDir(ctx: ToolContext, real: string, root: string, p: string): void {
  const dataDir = ctx.dataDir;
  if (!dataDir) return;
  if (insideDataDir(real, dataDir, root) || insideDataDir(path.resolve(root, p), dataDir, root)) {
    throw new AirlockError("data_dir_refused", `${p} is in airlock's data dir (${dataDir}: its tokens and every session's messages); file tools never read, list or write it`, { path: p });
  }
}

/**
 * Throws `data_dir_refused` when the open regular file `fh` is a hard link to a file directly in airlock's
 * data dir (same device and inode as its `approver-token`, `api-token`, `airlock.db`, …): a link made in the
 * workspace has an innocent name and path, but it is the token itself. Only files with more than one link are
 * compared (one `readdir` and an `lstat` per data dir entry).
 */
async function refuseDataDirLink(ctx: ToolContext, fh: FileHandle, p: string): Promise<void> {
  const dataDir = ctx.dataDir;
  if (!dataDir) return;
  const st = await fh.stat();
  if (st.nlink < 2) return;
  let names: string[];
  try {
    names = await readdir(dataDir);
  } catch {
    return; // no data dir to compare with
  }
  for (const n of names) {
    const d = await lstat(path.join(dataDir, n)).catch(() => undefined);
    if (d?.isFile() && d.ino === st.ino && d.dev === st.dev) {
      throw new AirlockError("data_dir_refused", `${p} is a hard link to ${path.join(dataDir, n)} in airlock's data dir (its tokens and every session's messages); file tools never read, list or write it`, { path: p });
    }
  }
}

/**
 * Read rule: anything may be read (the gate's security floor judges credential paths), but a path
 * SPELLED inside the workspace whose real target is outside it (a symlink leading out) is refused
 * with `path_outside_workspace` — except under `danger-full-access`.
 */
function checkRead(ctx: ToolContext, policy: SandboxPolicy, p: string): Resolved {
  const r = resolveFor(ctx, p);
  const spelled = path.resolve(r.root, p);
  const spelledInside = isInside(spelled, r.root) || isInside(path.resolve(ctx.session.workspace, p), ctx.session.workspace);
  if (policy !== "danger-full-access" && spelledInside && !r.inside) {
    throw new AirlockError("path_outside_workspace", `${p} leads out of the workspace (its real path is ${r.real}) through a symbolic link; read ${r.real} by its own name if you need it`, { path: p, real: r.real });
  }
  return r;
}

/**
 * Write rule: `read-only` refuses (`read_only_policy`); `workspace-write` needs the real path inside
 * the workspace (`path_outside_workspace`) and not `.git/hooks`/`.git/config` (`protected_path`);
 * `danger-full-access` writes anywhere.
 */
function checkWrite(ctx: ToolContext, policy: SandboxPolicy, p: string): Resolved {
  const r = resolveFor(ctx, p);
  switch (policy) {
    case "read-only":
      throw new AirlockError("read_only_policy", `cannot write ${p}: this session's sandbox policy is read-only; ask for sandbox_permissions "workspace-write" in a shell call, or start the session with a wider sandbox`, { path: p });
    case "workspace-write": {
      if (!r.inside) {
        throw new AirlockError("path_outside_workspace", `cannot write ${p}: its real path ${r.real} is outside the workspace ${r.root}; write inside the workspace`, { path: p, real: r.real });
      }
      const rel = path.relative(r.root, r.real);
      if (PROTECTED.test(rel)) {
        throw new AirlockError("protected_path", `cannot write ${p}: ${rel} is protected under workspace-write (git hooks and config run code on the host)`, { path: p, real: r.real });
      }
      return r;
    }
    case "danger-full-access":
      return r;
    default: {
      const never: never = policy;
      throw new AirlockError("internal", `unknown sandbox policy ${String(never)}`);
    }
  }
}

/** Largest file `developer__edit_file` reads whole (bytes, 16 MiB): a bigger one (a sparse `truncate -s 1G`) is refused `payload_too_large`, never loaded into airlock's memory. */
export const EDIT_MAX_BYTES = 16 * 1024 * 1024;

/** Bytes read from a file per step (the call's signal is checked between steps). */
const READ_CHUNK = 64 * 1024;

type Want = "file" | "dir";

/**
 * Opens the already-checked real path `real` for `want` without blocking and without following a
 * link: `O_NOFOLLOW | O_NONBLOCK | O_NOCTTY` (+ `O_DIRECTORY` for a folder; `O_WRONLY | O_CREAT`
 * with `write`). Then fstat: anything but a regular file (a folder for `dir`) is refused, and the fd
 * must still name `real` (`/proc/self/fd`), so a link swapped into a parent after the check is caught.
 * Throws AirlockError `file_not_found`, `invalid_arguments` (a folder for a file, or the reverse),
 * `not_regular_file` (FIFO, device, socket, a link swapped in), `tool_failed` (other open errors).
 */
export async function openChecked(real: string, p: string, want: Want, write = false): Promise<FileHandle> {
  const base = FS.O_NOFOLLOW | FS.O_NONBLOCK | FS.O_NOCTTY;
  const flags = want === "dir" ? base | FS.O_RDONLY | FS.O_DIRECTORY : write ? base | FS.O_WRONLY | FS.O_CREAT : base | FS.O_RDONLY;
  let fh: FileHandle;
  // a write creates exclusively first, so a file made at a path swapped in after the check can be removed again
  let created = false;
  try {
    if (write && want === "file") {
      try {
        fh = await open(real, flags | FS.O_EXCL, 0o666);
        created = true;
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
        fh = await open(real, flags, 0o666);
      }
    } else fh = await open(real, flags, 0o666);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    switch (code) {
      case "ENOENT":
        throw new AirlockError("file_not_found", `${p} does not exist (real path ${real})`, { path: p });
      case "ENOTDIR":
        if (want === "dir" && !isRegular(real)) throw new AirlockError("not_regular_file", `${p} is neither a folder nor a regular file; developer__list_dir lists folders only`, { path: p });
        throw new AirlockError("invalid_arguments", `${p} is not a directory; use developer__read_file`, { path: p });
      case "EISDIR":
        throw new AirlockError("invalid_arguments", `${p} is a directory; use developer__list_dir`, { path: p });
      case "ELOOP":
        throw new AirlockError("not_regular_file", `${p} became a symbolic link after it was checked (real path ${real}); the call was not run`, { path: p });
      case "ENXIO":
      case "EOPNOTSUPP":
        throw new AirlockError("not_regular_file", `${p} is a socket or a FIFO, not a regular file; file tools read and write regular files only`, { path: p });
      default:
        throw new AirlockError("tool_failed", `cannot open ${p}: ${(e as Error).message}`, { path: p });
    }
  }
  try {
    const st = await fh.stat();
    if (want === "file" && st.isDirectory()) throw new AirlockError("invalid_arguments", `${p} is a directory; use developer__list_dir`, { path: p });
    if (want === "dir" ? !st.isDirectory() : !st.isFile()) {
      const what = st.isFIFO() ? "a FIFO" : st.isSocket() ? "a socket" : st.isCharacterDevice() || st.isBlockDevice() ? "a device" : "not a regular file";
      throw new AirlockError("not_regular_file", `${p} is ${what}; file tools ${want === "dir" ? "list folders" : "read and write regular files"} only`, { path: p });
    }
    let now: string;
    try {
      now = readlinkSync(`/proc/self/fd/${fh.fd}`);
    } catch {
      now = real;
    }
    if (now !== real) {
      if (created) await unlink(now).catch(() => {}); // made where a swapped-in link led: removed again
      throw new AirlockError("not_regular_file", `${p} changed while it was opened (it now leads to ${now}, not ${real}); the call was not run`, { path: p });
    }
    return fh;
  } catch (e) {
    await fh.close().catch(() => {});
    throw e;
  }
}

function isRegular(p: string): boolean {
  try {
    return lstatSync(p).isFile();
  } catch {
    return false;
  }
}

function cancelled(p: string): AirlockError {
  return new AirlockError("cancelled", `reading ${p} was cancelled (the turn was cancelled or the call timed out)`, { path: p });
}

/** Reads at most `max` bytes of the regular file at `real`, in chunks, checking `signal` between them. Throws as {@link openChecked}, and `cancelled`. */
async function readText(
  ctx: ToolContext,
  real: string,
  p: string,
  max: number,
  signal: AbortSignal,
  whenLarger?: (size: number) => AirlockError,
): Promise<{ content: string; size: number; truncated: boolean }> {
  if (signal.aborted) throw cancelled(p);
  const fh = await openChecked(real, p, "file");
  try {
    await refuseDataDirLink(ctx, fh, p);
    const st = await fh.stat();
    if (whenLarger && st.size > max) throw whenLarger(st.size);
    const client = ctx.clientFiles?.readTextFile;
    if (client) {
      // checked and opened here (every wall above holds); the text comes from the editor (its unsaved buffer)
      const whole = Buffer.from(await client.call(ctx.clientFiles, real, signal));
      if (whenLarger && whole.length > max) throw whenLarger(whole.length);
      const truncated = whole.length > max;
      return { content: whole.subarray(0, Math.min(whole.length, max)).toString("utf8"), size: whole.length, truncated };
    }
    const chunks: Buffer[] = [];
    let n = 0;
    // read one byte past the cap: that is how a file whose size fstat does not know (/proc) shows as truncated
    while (n <= max) {
      if (signal.aborted) throw cancelled(p);
      const want = Math.min(READ_CHUNK, max + 1 - n);
      const chunk = Buffer.alloc(want);
      const { bytesRead } = await fh.read(chunk, 0, want, n);
      if (bytesRead === 0) break;
      chunks.push(chunk.subarray(0, bytesRead));
      n += bytesRead;
    }
    const truncated = n > max;
    const buf = Buffer.concat(chunks);
    const kept = Math.min(n, max);
    return { content: buf.subarray(0, kept).toString("utf8"), size: Math.max(st.size, n), truncated };
  } finally {
    await fh.close().catch(() => {});
  }
}

/** Replaces the content of the regular file at `real` (created when missing). Throws as {@link openChecked}. */
async function writeText(ctx: ToolContext, real: string, p: string, content: string): Promise<void> {
  const fh = await openChecked(real, p, "file", true);
  try {
    await refuseDataDirLink(ctx, fh, p);
    const client = ctx.clientFiles?.writeTextFile;
    if (client) {
      // checked and opened here (created when missing); the editor writes the text, so its buffer and undo see it
      await client.call(ctx.clientFiles, real, content, ctx.signal);
      return;
    }
    await fh.truncate(0);
    await fh.write(Buffer.from(content), 0, undefined, 0);
  } finally {
    await fh.close().catch(() => {});
  }
}

/**
 * `developer__edit_file`'s edit: `text` with its one occurrence of `oldString` replaced by `newString`, or
 * how many occurrences there are when that is not exactly one (an empty `oldString` occurs 0 times).
 * The console's preview of an edit card uses the same function.
 */
export function applyEdit(text: string, oldString: string, newString: string): string | { occurrences: number } {
  const occurrences = oldString === "" ? 0 : text.split(oldString).length - 1;
  if (occurrences !== 1) return { occurrences };
  const i = text.indexOf(oldString);
  return text.slice(0, i) + newString + text.slice(i + oldString.length);
}

const PathArg = z.string().min(1).describe("absolute, or relative to the workspace");

export const readFileTool = defineTool({
  name: "developer__read_file",
  description: readDescription,
  schema: z.strictObject({ path: PathArg }),
  readOnly: true,
  claude: {
    name: "Read",
    input: (args, { workspace }) => ({ file_path: resolveRealPath(resolveRealPath("/", workspace), args.path) }),
    args: (input) => renameClaudeFields("developer__read_file", input, { file_path: "path" }),
  },
  async execute(args, ctx) {
    const r = checkRead(ctx, ctx.policy, args.path);
    const text = await readText(ctx, r.real, args.path, ctx.config.limits.max_output_bytes, ctx.signal);
    const content = text.truncated ? `${text.content}\n[airlock: file truncated: showing ${ctx.config.limits.max_output_bytes} of ${text.size} bytes]` : text.content;
    return { path: r.real, content, size: text.size, truncated: text.truncated };
  },
});

export const writeFileTool = defineTool({
  name: "developer__write_file",
  description: writeDescription,
  schema: z.strictObject({ path: PathArg, content: z.string() }),
  readOnly: false,
  claude: {
    name: "Write",
    input: (args, { workspace }) => ({ file_path: resolveRealPath(resolveRealPath("/", workspace), args.path), content: args.content }),
    args: (input) => renameClaudeFields("developer__write_file", input, { file_path: "path", content: "content" }),
  },
  async execute(args, ctx) {
    const r = checkWrite(ctx, ctx.policy, args.path);
    mkdirSync(path.dirname(r.real), { recursive: true });
    await writeText(ctx, r.real, args.path, args.content);
    return { path: r.real, bytes: Buffer.byteLength(args.content) };
  },
});

export const editFileTool = defineTool({
  name: "developer__edit_file",
  description: editDescription,
  schema: z.strictObject({ path: PathArg, old_string: z.string().min(1), new_string: z.string() }),
  readOnly: false,
  claude: {
    name: "Edit",
    input: (args, { workspace }) => ({
      file_path: resolveRealPath(resolveRealPath("/", workspace), args.path),
      old_string: args.old_string,
      new_string: args.new_string,
    }),
    args: (input) => renameClaudeFields("developer__edit_file", input, { file_path: "path", old_string: "old_string", new_string: "new_string" }),
  },
  async execute(args, ctx) {
    const r = checkWrite(ctx, ctx.policy, args.path);
    let text;
    try {
      // from one fd, one byte past the cap: a file growing while it is read stops there
      text = await readText(ctx, r.real, args.path, EDIT_MAX_BYTES, ctx.signal, (size) =>
        new AirlockError("payload_too_large", `${args.path} is ${size} bytes, over the ${EDIT_MAX_BYTES}-byte limit of developer__edit_file; edit it with a shell command (sed, patch) instead`, { path: args.path, size, limit_bytes: EDIT_MAX_BYTES }),
      );
    } catch (e) {
      if (e instanceof AirlockError && e.code === "file_not_found") {
        throw new AirlockError("file_not_found", `${args.path} does not exist (real path ${r.real}); use developer__write_file to create it`, { path: args.path });
      }
      throw e;
    }
    if (text.truncated) throw new AirlockError("payload_too_large", `${args.path} grew past the ${EDIT_MAX_BYTES}-byte limit of developer__edit_file while it was read`, { path: args.path, limit_bytes: EDIT_MAX_BYTES });
    const edited = applyEdit(text.content, args.old_string, args.new_string);
    if (typeof edited !== "string") {
      throw new AirlockError(
        "edit_no_match",
        edited.occurrences === 0
          ? `old_string was not found in ${args.path}; read the file and copy the exact text, whitespace included`
          : `old_string occurs ${edited.occurrences} times in ${args.path}; include more surrounding text so it occurs exactly once`,
        { path: args.path, occurrences: edited.occurrences },
      );
    }
    await writeText(ctx, r.real, args.path, edited);
    return { path: r.real, replacements: 1 };
  },
});

export const listDirTool = defineTool({
  name: "developer__list_dir",
  description: listDescription,
  schema: z.strictObject({ path: PathArg }),
  readOnly: true,
  async execute(args, ctx) {
    const r = checkRead(ctx, ctx.policy, args.path);
    if (ctx.signal.aborted) throw cancelled(args.path);
    // the folder the fd holds (not the path, which a link swapped in could redirect)
    const fh = await openChecked(r.real, args.path, "dir");
    try {
      const dir = `/proc/self/fd/${fh.fd}`;
      let names: string[];
      try {
        names = (await readdir(dir)).sort();
      } catch (e) {
        throw new AirlockError("tool_failed", `cannot list ${args.path}: ${(e as Error).message}`, { path: args.path });
      }
      const entries = [];
      for (const name of names.slice(0, MAX_DIR_ENTRIES)) {
        if (ctx.signal.aborted) throw cancelled(args.path);
        try {
          const st = await lstat(path.join(dir, name));
          const type = st.isSymbolicLink() ? "symlink" : st.isDirectory() ? "dir" : st.isFile() ? "file" : "other";
          entries.push({ name, type, size: st.size });
        } catch {
          entries.push({ name, type: "other", size: 0 });
        }
      }
      return { path: r.real, entries, truncated: names.length > MAX_DIR_ENTRIES };
    } finally {
      await fh.close().catch(() => {});
    }
  },
});
