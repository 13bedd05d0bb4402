/**
 * @module console/preview
 * What a `developer__write_file` / `developer__edit_file` card would change: the current content of the
 * workspace file it targets against the proposed content, as a line diff. The same refusals as the file
 * tools apply, and more: never airlock's data dir, never outside the session's workspace (symlinks
 * followed), never a credential file (what the security floor asks before reading, and what the sandbox
 * hides under HOME), regular files only, at most {@link MAX_PREVIEW_BYTES}. The preview shows the current
 * content, so it must not become a way to read what a tool call could not read without a person.
 */
import { closeSync, constants, fstatSync, lstatSync, openSync, readSync } from "node:fs";
import { homedir } from "node:os";
import path from "node:path";
import type { Card } from "../card/pending.ts";
import { AirlockError } from "../errors.ts";
import { credentialKind } from "../gate/inspectors/floor-paths.ts";
import { isInside, resolveRealPath } from "../launcher/resolve.ts";
import { CREDENTIAL_DIRS, CREDENTIAL_FILES, CREDENTIALS, insideDataDir } from "../launcher/credentials.ts";

/** Credential folders that are one wherever they sit (a project's own `.claude` is not Claude Code's home). */
const ANYWHERE_DIRS = new Set(CREDENTIALS.filter((c) => c.dir && c.anywhere).map((c) => c.rel));
import { applyEdit } from "../tool/files.ts";
import { diffLines, type DiffLine } from "./diff.ts";

/** The largest current file the console previews, bytes (1 MiB). */
export const MAX_PREVIEW_BYTES = 1024 * 1024;

/** `GET /sessions/:id/actions/:request_id/preview`. */
export interface Preview {
  request_id: string;
  tool: string;
  /** The path as the call spelled it. */
  path: string;
  /** Whether the target exists now (a write may create it). */
  exists: boolean;
  /** Current size, bytes (0 when missing). */
  size: number;
  /** Every line of the current and proposed content; see console/diff.ts. */
  diff: DiffLine[];
  /** False when the diff is a block replacement (too large for the LCS table). */
  exact: boolean;
  /** Set when the edit cannot apply to the current file (its `old_string` occurs 0 or 2+ times): the call would fail. */
  problem?: string;
}

function refuse(p: string, why: string): AirlockError {
  return new AirlockError("preview_refused", `no preview of ${p}: ${why}; read the card's arguments instead`, { path: p });
}

/** Reads a regular file without following a final symlink; null when it does not exist. */
function readCurrent(real: string, shown: string): { text: string; size: number } | null {
  let st;
  try {
    st = lstatSync(real);
  } catch {
    return null;
  }
  if (!st.isFile()) throw refuse(shown, "it is not a regular file");
  if (st.size > MAX_PREVIEW_BYTES) throw refuse(shown, `it is ${st.size} bytes, more than the preview limit of ${MAX_PREVIEW_BYTES}`);
  const fd = openSync(real, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  try {
    const fst = fstatSync(fd);
    if (!fst.isFile() || fst.ino !== st.ino) throw refuse(shown, "it changed while being opened");
    const buf = Buffer.alloc(Math.min(fst.size, MAX_PREVIEW_BYTES) + 1);
    let n = 0;
    while (n < buf.length) {
      const got = readSync(fd, buf, n, buf.length - n, n);
      if (got === 0) break;
      n += got;
    }
    if (n > MAX_PREVIEW_BYTES) throw refuse(shown, `it is larger than the preview limit of ${MAX_PREVIEW_BYTES} bytes`);
    return { text: buf.subarray(0, n).toString("utf8"), size: n };
  } finally {
    closeSync(fd);
  }
}

/**
 * Why the file is a credential the preview must not show, or null: the floor's credential files (SSH private
 * keys, AWS credentials, .netrc, .env, airlock's tokens), by its spelled and its real path, and anything in the
 * folders and files the sandbox hides under HOME (`~/.ssh`, `~/.aws`, `~/.gnupg`, …, `~/.git-credentials`, …)
 * or in a folder of the same name anywhere.
 */
export function credentialOf(spelled: string, real: string, home: string): string | null {
  const hit = credentialKind(real, home) ?? credentialKind(spelled, home);
  if (hit) return hit;
  const parts = real.split("/");
  for (const d of CREDENTIAL_DIRS) {
    if (isInside(real, path.join(home, d))) return `inside ~/${d}`;
    if (!d.includes("/") && parts.includes(d) && ANYWHERE_DIRS.has(d)) return `inside a ${d} folder`;
  }
  for (const f of CREDENTIAL_FILES) if (path.basename(real) === f) return `a ${f} file`;
  return null;
}

/**
 * The preview of `card` for a session whose workspace is `workspace`.
 * @param dataDir airlock's data dir: a target inside it (or containing it) is refused.
 * @throws AirlockError `bad_request` (the card's tool has no file preview or its arguments lack a path),
 *   `preview_refused` (403: outside the workspace, in the data dir, not a regular file, larger than 1 MiB).
 */
export function previewCard(card: Card, workspace: string, dataDir: string): Preview {
  if (card.tool !== "developer__write_file" && card.tool !== "developer__edit_file") {
    throw new AirlockError("bad_request", `a ${card.tool} card has no file preview; only developer__write_file and developer__edit_file cards do`);
  }
  const args = (card.arguments ?? {}) as Record<string, unknown>;
  const p = args.path;
  if (typeof p !== "string" || p === "") throw new AirlockError("bad_request", "the card's arguments have no path");
  const root = resolveRealPath("/", workspace);
  const real = resolveRealPath(root, p);
  const data = resolveRealPath("/", dataDir);
  if (!isInside(real, root)) throw refuse(p, `its real path ${real} is outside the workspace ${root}`);
  // The data dir (tokens, the database, the config) is never previewed, also when the workspace is it or contains
  // it; only a workspace strictly inside the data dir (as in tests) keeps its own files.
  if (insideDataDir(real, data, root) || isInside(data, real)) throw refuse(p, "it is in airlock's data dir");
  const secret = credentialOf(p, real, process.env.HOME || homedir());
  if (secret) throw refuse(p, `it is a credential file (${secret})`);
  const cur = readCurrent(real, p);
  const current = cur?.text ?? "";
  let proposed: string;
  let problem: string | undefined;
  if (card.tool === "developer__write_file") {
    proposed = typeof args.content === "string" ? args.content : "";
  } else {
    const oldS = typeof args.old_string === "string" ? args.old_string : "";
    const newS = typeof args.new_string === "string" ? args.new_string : "";
    const edited = applyEdit(current, oldS, newS);
    if (typeof edited === "string") {
      proposed = edited;
    } else {
      proposed = current;
      problem = cur === null ? `${p} does not exist: the edit would fail` : `old_string occurs ${edited.occurrences} times in the current ${path.basename(p)}: the edit would fail`;
    }
  }
  const d = diffLines(current, proposed);
  return { request_id: card.request_id, tool: card.tool, path: p, exists: cur !== null, size: cur?.size ?? 0, diff: d.lines, exact: d.exact, ...(problem ? { problem } : {}) };
}
