/**
 * @module cli/sessions
 * `airlock sessions list | show ID`: the stored sessions, read from the store in the data dir.
 */
import type { Store } from "../store/store.ts";
import type { CommonOptions } from "./context.ts";

/** Options of `airlock sessions list` and `airlock sessions show`. */
export interface SessionsOptions extends CommonOptions {
  /** `--json`: print JSON on stdout instead of a table / transcript. */
  json?: boolean;
}

/**
 * Runs `use` on the configured store (the data dir's SQLite, WAL: a running server may keep writing; or PostgreSQL), closing it after.
 * @returns what `use` returns (the exit code). @throws what opening the store or `use` throws.
 */
export async function withStore(opts: CommonOptions, use: (store: Store) => number | Promise<number>): Promise<number> {
  const { resolveContext } = await import("./context.ts");
  const { openStore } = await import("../store/open.ts");
  const ctx = await resolveContext(opts);
  const store = await openStore(ctx.config, ctx.dataDir);
  try {
    return await use(store);
  } finally {
    await store.close();
  }
}

/**
 * Lists sessions (newest first): id, created, mode, sandbox, headless, parent, title/first prompt.
 * `--json` prints `{"sessions": [...]}` on stdout.
 * @returns 0.
 */
export async function sessionsList(opts: SessionsOptions): Promise<number> {
  const { writeStdout, writeJson, table } = await import("./output.ts");
  return withStore(opts, async function listSessions(store) {
    const sessions = await store.listSessions({ limit: 1000 });
    if (opts.json) {
      writeJson({ sessions });
      return 0;
    }
    if (sessions.length === 0) {
      writeStdout("no sessions\n");
      return 0;
    }
    const rows: string[][] = [];
    for (const s of sessions) {
      const first = s.title ?? (await store.listMessages(s.id)).find((m) => m.role === "user")?.content ?? "";
      const last = (await store.listTurns(s.id)).at(-1);
      rows.push( [s.id, s.created_at.replace("T", " ").slice(0, 19), s.mode, s.sandbox, s.headless ? "headless" : "-", last?.status ?? "-", s.parent_session_id ?? "-", oneLine(first, 50)]);
    }
    writeStdout(table(["ID", "CREATED", "MODE", "SANDBOX", "HEADLESS", "LAST TURN", "PARENT", "TITLE"], rows));
    return 0;
  });
}

/**
 * Shows one session with its turns and messages (`--json`: `{session, turns, messages}`).
 * @param id a session id (`ses_…`).
 * @returns 0.
 * @throws AirlockError `session_not_found` (exit 1).
 */
export async function sessionsShow(id: string, opts: SessionsOptions): Promise<number> {
  const { writeStdout, writeJson } = await import("./output.ts");
  return withStore(opts, async function showSession(store) {
    const session = await store.requireSession(id);
    const turns = await store.listTurns(id);
    const messages = await store.listMessages(id);
    if (opts.json) {
      writeJson({ session, turns, messages });
      return 0;
    }
    let out = `session ${session.id}\n`;
    out += `  workspace ${session.workspace}\n  mode ${session.mode}, sandbox ${session.sandbox}, privacy ${session.privacy}${session.headless ? ", headless" : ""}\n`;
    out += `  provider ${session.provider}${session.model ? ` (${session.model})` : ""}\n`;
    if (session.parent_session_id) out += `  parent ${session.parent_session_id}\n`;
    for (const t of turns) out += `  turn ${t.id}: ${t.status}${t.error ? ` — ${t.error}` : ""}\n`;
    out += "\n";
    for (const m of messages) {
      if (m.role === "tool") out += `[tool ${m.name ?? ""}${m.is_error ? " error" : ""}] ${oneLine(m.content, 400)}\n`;
      else {
        if (m.content) out += `[${m.role}] ${m.content}\n`;
        for (const c of m.tool_calls ?? []) out += `[${m.role} → ${c.name}] ${oneLine(JSON.stringify(c.arguments), 400)}\n`;
      }
    }
    writeStdout(out);
    return 0;
  });
}

function oneLine(s: string, max: number): string {
  const t = s.replace(/\s+/g, " ").trim();
  return t.length > max ? `${t.slice(0, max - 1)}…` : t;
}
