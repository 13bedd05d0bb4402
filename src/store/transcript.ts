/**
 * @module store/transcript
 * Each session's transcript, `<dataDir>/transcripts/<session_id>.jsonl`, in Claude Code's transcript
 * shape, written as the session goes: hooks get its path as `transcript_path` and read it the way public
 * hook scripts read Claude Code's (the last assistant text, the `tool_use` blocks, the tool results).
 *
 * The shape is Claude Code's JSONL transcript as observed in public transcripts and in the hook scripts
 * that read them (no official schema exists): notes/transcript-format.md of DRMacIver/claude-reliability
 * and docs/claude-cli-jsonl-format.md of Huntehhh/claude-code-chat (the line fields), and Stop hooks such
 * as scripts/thopter-last-message.mjs of telepath-computer/thopter-swarm (`type === "assistant"`, then the
 * `text` blocks of `message.content`). One line per stored message (system messages are not written):
 * - `{type: "user"|"assistant", message: {role, content: [block…]}, uuid, parentUuid, sessionId,
 *   timestamp, cwd, isSidechain, userType: "external"}`; `uuid` is the message id, `parentUuid` the
 *   previous line's uuid (null on the first), `timestamp` the message's ISO time, `cwd` the session's
 *   workspace, `isSidechain` true for a subagent's session (Claude Code's mark of a subagent transcript).
 * - blocks: `{type: "text", text}`; an assistant's tool calls as `{type: "tool_use", id, name, input}`
 *   with the name and input hooks see (`Bash` + `{command}`, `mcp__server__tool`: gate/inspectors/hooks.ts);
 *   a tool result as a `type: "user"` line holding `{type: "tool_result", tool_use_id, content, is_error}`.
 *
 * Writes are whole lines, appended with one `write` on an `O_APPEND` descriptor, right after the
 * store commits the message (the store's append listener), so a line is on disk before anything that
 * could run a hook after its message. A transcript that does not match the store when first used by a
 * process (a process killed between the two writes, a torn line, a file edited by hand) is brought in
 * step: the missing lines are appended when the file is an exact prefix of what the store holds, else
 * the whole file is rebuilt from the store and renamed into place. Files are 0600, the folder 0700.
 */
import { chmodSync, closeSync, constants, fchmodSync, fstatSync, lstatSync, mkdirSync, openSync, renameSync, unlinkSync, writeSync } from "node:fs";
import path from "node:path";
import { foreignOwner, readRegularFile, TRANSCRIPTS_DIR } from "../config/paths.ts";
import { AirlockError } from "../errors.ts";
import type { Message, Session } from "../session/types.ts";
import type { Store } from "./store.ts";

/** The name and input a `tool_use` block shows: what hooks see as `tool_name` and `tool_input`. */
export interface ToolUseView {
  name: string;
  input: unknown;
}

/**
 * Maps an airlock tool call to the name and input hooks see (`claudeToolName` / `claudeToolInput` in
 * gate/inspectors/hooks.ts, wired by the runtime). `workspace` is the session's (absolute). Must not throw.
 */
export type ToolUseNamer = (airlockName: string, args: unknown, workspace: string) => ToolUseView;

/** Session ids are `ses_` + hex (ids.ts); anything else never becomes a file name. */
const SAFE_ID = /^[A-Za-z0-9_-]{1,128}$/;

/**
 * The transcript file of a session: `<dataDir>/transcripts/<sessionId>.jsonl`. Pure (no filesystem access).
 * @param dataDir airlock's data dir, absolute (pass its real path so hooks get a real path).
 * @throws AirlockError `bad_request` when `sessionId` is not a plain id (letters, digits, `_`, `-`).
 */
export function transcriptPath(dataDir: string, sessionId: string): string {
  if (!SAFE_ID.test(sessionId)) throw new AirlockError("bad_request", `${JSON.stringify(sessionId)} is not a session id`);
  return path.join(dataDir, TRANSCRIPTS_DIR, `${sessionId}.jsonl`);
}

/** One content block of a transcript line (Claude Code's message content blocks). */
export type TranscriptBlock =
  | { type: "text"; text: string }
  | { type: "tool_use"; id: string; name: string; input: unknown }
  | { type: "tool_result"; tool_use_id: string; content: string; is_error: boolean };

/** One line of a transcript, before it is serialised. */
export interface TranscriptLine {
  type: "user" | "assistant";
  message: { role: "user" | "assistant"; content: TranscriptBlock[] };
  uuid: string;
  parentUuid: string | null;
  sessionId: string;
  timestamp: string;
  cwd: string;
  isSidechain: boolean;
  userType: "external";
}

/** The name hooks would see when no namer is given: airlock's own. */
const identityNamer: ToolUseNamer = (name, args) => ({ name, input: args });

/**
 * The transcript lines of `messages` (in order), the first one's parent being `parentUuid`. System
 * messages are skipped (they are not part of Claude Code's transcript either). Pure.
 */
export function transcriptLines(
  session: Pick<Session, "id" | "workspace" | "parent_session_id">,
  messages: readonly Message[],
  parentUuid: string | null,
  namer: ToolUseNamer = identityNamer,
): TranscriptLine[] {
  const out: TranscriptLine[] = [];
  let parent = parentUuid;
  for (const m of messages) {
    const message = messageOf(m, session.workspace, namer);
    if (!message) continue;
    out.push({
      type: message.role,
      message,
      uuid: m.id,
      parentUuid: parent,
      sessionId: session.id,
      timestamp: m.created_at,
      cwd: session.workspace,
      isSidechain: session.parent_session_id !== null,
      userType: "external",
    });
    parent = m.id;
  }
  return out;
}

function messageOf(m: Message, workspace: string, namer: ToolUseNamer): TranscriptLine["message"] | null {
  switch (m.role) {
    case "system":
      return null;
    case "user":
      return { role: "user", content: [{ type: "text", text: m.content }] };
    case "assistant": {
      const content: TranscriptBlock[] = m.content ? [{ type: "text", text: m.content }] : [];
      for (const c of m.tool_calls ?? []) {
        const args = c.invalid !== undefined ? {} : (c.arguments ?? {});
        const view = safeView(namer, c.name, args, workspace);
        content.push({ type: "tool_use", id: c.id, name: view.name, input: view.input });
      }
      return { role: "assistant", content };
    }
    case "tool":
      return { role: "user", content: [{ type: "tool_result", tool_use_id: m.tool_call_id ?? "", content: m.content, is_error: m.is_error === true }] };
    default: {
      const never: never = m.role;
      throw new AirlockError("internal", `unknown message role ${String(never)}`);
    }
  }
}

function safeView(namer: ToolUseNamer, name: string, args: unknown, workspace: string): ToolUseView {
  try {
    return namer(name, args, workspace);
  } catch {
    return { name, input: args };
  }
}

/** Serialises lines as JSONL text (each line ends in `\n`). */
function jsonl(lines: readonly TranscriptLine[]): string {
  return lines.map((l) => `${JSON.stringify(l)}\n`).join("");
}

/** What this process knows a session's file holds: its size (bytes) and its last line's uuid. */
interface FileState {
  size: number;
  last: string | null;
}

export interface TranscriptsOptions {
  /** airlock's data dir (absolute; its real path, so the paths handed to hooks are real). */
  dataDir: string;
  store: Store;
  /** The names and inputs hooks see (default: airlock's own). */
  toolUse?: ToolUseNamer;
  /** Where a failed write is reported (one line); default stderr. */
  log?: (line: string) => void;
}

/**
 * The transcripts of one data dir, written by one process. Attach it to the store with
 * `store.onMessagesAppended((m) => transcripts.appended(m))`; hand hooks {@link Transcripts.path}.
 */
export class Transcripts {
  readonly dir: string;
  private readonly store: Store;
  private readonly namer: ToolUseNamer;
  private readonly log: (line: string) => void;
  private readonly files = new Map<string, FileState>();
  /** Per session, the end of its writes in flight: writes of one session run one after another, in order. */
  private readonly writing = new Map<string, Promise<void>>();
  /** The folder's identity when this process made or checked it: a folder swapped in later is not written to. */
  private folder: { dev: number; ino: number } | undefined;

  constructor(opts: TranscriptsOptions) {
    this.dir = path.join(opts.dataDir, TRANSCRIPTS_DIR);
    this.store = opts.store;
    this.namer = opts.toolUse ?? identityNamer;
    this.log = opts.log ?? ((line) => void process.stderr.write(`${line}\n`));
  }

  /**
   * Creates the folder (0700) if missing, tightens a wider mode to 0700, and remembers its identity.
   * Call at start, before any host process is launched: the launcher hides the folder only when it exists.
   * @throws AirlockError `data_dir_unusable` when it cannot be created, is not a real folder (a symlink), or belongs to
   *   another user than airlock's or root.
   */
  ensureDir(): string {
    try {
      mkdirSync(this.dir, { mode: 0o700 });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw unusable(this.dir, e);
    }
    const st = lstatSync(this.dir);
    if (!st.isDirectory()) throw new AirlockError("data_dir_unusable", `${this.dir} is not a folder (a symlink or a file); remove it and airlock makes the transcripts folder again`);
    // one another user put there while the data dir was open to them stays theirs (they may change its mode back,
    // rename or replace the transcripts hooks read): refused, as a database file of theirs is (store/db.ts)
    if (foreignOwner(st.uid)) throw new AirlockError("data_dir_unusable", `${this.dir} belongs to uid ${st.uid}, not to the user airlock runs as (uid ${process.geteuid?.()}): its owner could replace the transcripts hooks read; remove it and airlock makes the transcripts folder again`);
    if ((st.mode & 0o077) !== 0) chmodSync(this.dir, 0o700);
    this.folder = { dev: st.dev, ino: st.ino };
    return this.dir;
  }

  /**
   * The session's transcript, brought in step with the store first (see the module doc), created empty
   * when the session has no message yet. For every hook input's `transcript_path`.
   * @returns `<dataDir>/transcripts/<sessionId>.jsonl` (absolute).
   * @throws AirlockError `bad_request` (not a session id), `session_not_found`, `data_dir_unusable` (the file cannot be written).
   */
  async path(sessionId: string): Promise<string> {
    const file = transcriptPath(path.dirname(this.dir), sessionId);
    await this.store.requireSession(sessionId);
    const done = Promise.withResolvers<void>();
    this.queue(sessionId, async () => {
      try {
        const known = this.files.get(sessionId);
        if (!known || currentSize(file) !== known.size) await this.sync(sessionId);
        done.resolve();
      } catch (e) {
        done.reject(e);
      }
    });
    await done.promise;
    return file;
  }

  /** Runs `fn` after the session's writes in flight. */
  private queue(sessionId: string, fn: () => Promise<void>): void {
    const prev = this.writing.get(sessionId) ?? Promise.resolve();
    const next = prev.then(fn);
    this.writing.set(sessionId, next);
    void next.finally(() => {
      if (this.writing.get(sessionId) === next) this.writing.delete(sessionId);
    });
  }

  /** Resolves when every transcript write started so far has ended (tests, shutdown). */
  async settled(): Promise<void> {
    while (this.writing.size) await Promise.all([...this.writing.values()]);
  }

  /**
   * Writes the lines of messages the store just appended (the store's append listener). Never throws:
   * a failure is logged and the file is brought in step at its next use ({@link path} throws if it still cannot).
   */
  appended(messages: readonly Message[]): void {
    const bySession = new Map<string, Message[]>();
    for (const m of messages) {
      const list = bySession.get(m.session_id);
      if (list) list.push(m);
      else bySession.set(m.session_id, [m]);
    }
    for (const [sessionId, msgs] of bySession) {
      this.queue(sessionId, async () => {
        try {
          await this.append(sessionId, msgs);
        } catch (e) {
          this.files.delete(sessionId);
          this.log(`airlock: the transcript of session ${sessionId} could not be written (${(e as Error).message}); it is rebuilt from the store at its next use`);
        }
      });
    }
  }

  private async append(sessionId: string, msgs: Message[]): Promise<void> {
    const file = transcriptPath(path.dirname(this.dir), sessionId);
    const known = this.files.get(sessionId);
    // in step when this process wrote the file last and the first new message follows the last line
    if (!known || currentSize(file) !== known.size || (await this.store.previousMessageId(msgs[0]!.id)) !== known.last) {
      await this.sync(sessionId);
      return;
    }
    const session = await this.store.getSession(sessionId);
    if (!session) return;
    const lines = transcriptLines(session, msgs, known.last, this.namer);
    if (lines.length === 0) return;
    const size = this.write(file, jsonl(lines), "append");
    this.files.set(sessionId, { size, last: lines[lines.length - 1]!.uuid });
  }

  /** Makes the file hold exactly the store's lines: appends what is missing, or rebuilds it. */
  private async sync(sessionId: string): Promise<void> {
    const session = await this.store.getSession(sessionId);
    if (!session) return;
    const file = transcriptPath(path.dirname(this.dir), sessionId);
    const lines = transcriptLines(session, await this.store.listMessages(sessionId), null, this.namer);
    const want = jsonl(lines);
    const last = lines.length ? lines[lines.length - 1]!.uuid : null;
    const have = readExisting(file);
    let size: number;
    if (have === want) size = this.write(file, "", "append");
    else if (have !== null && want.startsWith(have) && (have === "" || have.endsWith("\n"))) size = this.write(file, want.slice(have.length), "append");
    else size = this.write(file, want, "replace");
    this.files.set(sessionId, { size, last });
  }

  /**
   * Appends `text` with one write on an `O_APPEND|O_NOFOLLOW` descriptor (mode 0600), or replaces the
   * file (a 0600 temp file renamed over it). Returns the file's size after, bytes.
   */
  private write(file: string, text: string, how: "append" | "replace"): number {
    this.checkFolder();
    const target = how === "append" ? file : `${file}.tmp-${process.pid}-${Buffer.from(crypto.getRandomValues(new Uint8Array(6))).toString("hex")}`;
    // O_NONBLOCK: a FIFO a hook put at the path (it is handed the path; an empty transcript has a FIFO's size, 0, so
    // the size check in append() passes) would block this open until a reader came; now ENXIO, or not a regular file below
    const flags = constants.O_WRONLY | constants.O_CREAT | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY | (how === "append" ? constants.O_APPEND : constants.O_EXCL);
    let fd: number;
    try {
      fd = openSync(target, flags, 0o600);
    } catch (e) {
      throw unusable(file, e);
    }
    try {
      const st = fstatSync(fd);
      if (!st.isFile()) throw new AirlockError("data_dir_unusable", `${file} is not a regular file; remove it and airlock rebuilds the transcript`);
      if ((st.mode & 0o077) !== 0) fchmodSync(fd, 0o600);
      const buf = Buffer.from(text, "utf8");
      for (let off = 0; off < buf.length; ) off += writeSync(fd, buf, off, buf.length - off);
      const size = fstatSync(fd).size;
      if (how === "replace") renameSync(target, file);
      return size;
    } catch (e) {
      if (how === "replace") {
        try {
          unlinkSync(target);
        } catch {
          // gone already
        }
      }
      throw e instanceof AirlockError ? e : unusable(file, e);
    } finally {
      closeSync(fd);
    }
  }

  /** The folder must still be the one {@link ensureDir} made: one put in its place is never written to. */
  private checkFolder(): void {
    if (!this.folder) this.ensureDir();
    let st;
    try {
      st = lstatSync(this.dir);
    } catch (e) {
      throw unusable(this.dir, e);
    }
    if (!st.isDirectory() || st.dev !== this.folder!.dev || st.ino !== this.folder!.ino) {
      throw new AirlockError("data_dir_unusable", `the transcripts folder ${this.dir} was replaced while airlock ran; restart airlock to make it again`);
    }
  }
}

/** The file's size in bytes, or -1 when it does not exist (or cannot be read). */
function currentSize(file: string): number {
  try {
    return lstatSync(file).size;
  } catch {
    return -1;
  }
}

/**
 * The file's text, or null when it does not exist. A symlink or other non-file reads as null (it is replaced).
 * Checked on the descriptor read (config/paths.ts `readRegularFile`): a FIFO swapped in after a check by path
 * cannot block the read.
 */
function readExisting(file: string): string | null {
  try {
    return readRegularFile(file, { follow: false }).toString("utf8");
  } catch {
    return null;
  }
}

function unusable(p: string, e: unknown): AirlockError {
  const err = e as NodeJS.ErrnoException;
  return new AirlockError("data_dir_unusable", `cannot write the transcript ${p}: ${err.code ?? err.message}; check that the data dir is writable and not full`);
}
