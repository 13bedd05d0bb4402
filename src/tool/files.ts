/**
 * @module tool/files
 * The host-side file tools (`developer__read_file`, `write_file`, `edit_file`, `list_dir`). Every path
 * is resolved to its real target first (symlinks followed component by component, missing tail kept),
 * and the checks judge that real path under the call's sandbox policy (SPEC §4, §9).
 */
import { lstatSync, mkdirSync, openSync, readdirSync, readSync, closeSync, readFileSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { z } from "zod";
import { AirlockError } from "../errors.ts";
import { effectivePolicy } from "../launcher/for-tool.ts";
import type { SandboxPolicy } from "../launcher/policy.ts";
import { isInside, resolveRealPath } from "../launcher/resolve.ts";
import { defineTool, type ToolContext } from "./tool.ts";
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
  return { real, root, inside: isInside(real, root) };
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

function readText(real: string, p: string, max: number): { content: string; size: number; truncated: boolean } {
  let st;
  try {
    st = statSync(real);
  } catch {
    throw new AirlockError("file_not_found", `${p} does not exist (real path ${real})`, { path: p });
  }
  if (st.isDirectory()) throw new AirlockError("invalid_arguments", `${p} is a directory; use developer__list_dir`, { path: p });
  const fd = openSync(real, "r");
  try {
    const buf = Buffer.alloc(Math.min(st.size, max));
    let n = 0;
    while (n < buf.length) {
      const got = readSync(fd, buf, n, buf.length - n, n);
      if (got === 0) break;
      n += got;
    }
    return { content: buf.subarray(0, n).toString("utf8"), size: st.size, truncated: st.size > max };
  } finally {
    closeSync(fd);
  }
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
  },
  async execute(args, ctx) {
    const r = checkRead(ctx, effectivePolicy(args, ctx), args.path);
    const text = readText(r.real, args.path, ctx.config.limits.max_output_bytes);
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
  },
  async execute(args, ctx) {
    const r = checkWrite(ctx, effectivePolicy(args, ctx), args.path);
    mkdirSync(path.dirname(r.real), { recursive: true });
    writeFileSync(r.real, args.content);
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
  },
  async execute(args, ctx) {
    const r = checkWrite(ctx, effectivePolicy(args, ctx), args.path);
    let text: string;
    try {
      text = readFileSync(r.real, "utf8");
    } catch {
      throw new AirlockError("file_not_found", `${args.path} does not exist (real path ${r.real}); use developer__write_file to create it`, { path: args.path });
    }
    const count = text.split(args.old_string).length - 1;
    if (count !== 1) {
      throw new AirlockError(
        "edit_no_match",
        count === 0
          ? `old_string was not found in ${args.path}; read the file and copy the exact text, whitespace included`
          : `old_string occurs ${count} times in ${args.path}; include more surrounding text so it occurs exactly once`,
        { path: args.path, occurrences: count },
      );
    }
    const i = text.indexOf(args.old_string);
    writeFileSync(r.real, text.slice(0, i) + args.new_string + text.slice(i + args.old_string.length));
    return { path: r.real, replacements: 1 };
  },
});

export const listDirTool = defineTool({
  name: "developer__list_dir",
  description: listDescription,
  schema: z.strictObject({ path: PathArg }),
  readOnly: true,
  async execute(args, ctx) {
    const r = checkRead(ctx, effectivePolicy(args, ctx), args.path);
    let names: string[];
    try {
      names = readdirSync(r.real).sort();
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === "ENOENT") throw new AirlockError("file_not_found", `${args.path} does not exist (real path ${r.real})`, { path: args.path });
      if (code === "ENOTDIR") throw new AirlockError("invalid_arguments", `${args.path} is not a directory; use developer__read_file`, { path: args.path });
      throw new AirlockError("tool_failed", `cannot list ${args.path}: ${(e as Error).message}`, { path: args.path });
    }
    const entries = names.slice(0, MAX_DIR_ENTRIES).map((name) => {
      try {
        const st = lstatSync(path.join(r.real, name));
        const type = st.isSymbolicLink() ? "symlink" : st.isDirectory() ? "dir" : st.isFile() ? "file" : "other";
        return { name, type, size: st.size };
      } catch {
        return { name, type: "other", size: 0 };
      }
    });
    return { path: r.real, entries, truncated: names.length > MAX_DIR_ENTRIES };
  },
});
