/**
 * @module cli/audit
 * `airlock audit`: the decision log (every judged call, card and answer attempt), read from the data dir's
 * database directly (no server needed) — a table, `--json`, or `--export jsonl` (every matching row, oldest
 * first, one JSON object per line, for an external store).
 */
import type { AuditRow } from "../store/store.ts";
import type { CommonOptions } from "./context.ts";

/** Options of `airlock audit`. */
export interface AuditOptions extends CommonOptions {
  /** `--session ID`: rows of this session and every session under it. */
  session?: string;
  /** `--since T`: an audit id (rows after it) or an ISO time (rows at or after it). */
  since?: string;
  /** `--decision D`: a decision (allow, ask, deny, refused, allow_once …) or an error code. */
  decision?: string;
  /** `--limit N`: 1–1000, default 100 (ignored by `--export`). */
  limit?: number;
  /** `--json`: `{"audit": [...]}` on stdout, newest first. */
  json?: boolean;
  /** `--export jsonl`: every matching row, oldest first, one JSON object per line. */
  export?: "jsonl";
}

/** Rows written per stdout write by `--export jsonl`. */
const EXPORT_CHUNK = 500;

/**
 * Prints the decision log: newest first as a table (or `--json`), or every matching row as JSON lines (`--export jsonl`).
 * @returns 0.
 * @throws AirlockError `usage` (exit 2) for a bad `--since` or `--decision`; `session_not_found` (exit 1) for an unknown `--session`; `data_dir_unusable`, `config_invalid` (exit 2).
 */
export async function auditCommand(opts: AuditOptions): Promise<number> {
  const { withStore } = await import("./sessions.ts");
  const { queryAudit, exportAudit, parseAuditFlags } = await import("../store/audit-log.ts");
  const { writeStdout, writeJson, table } = await import("./output.ts");
  const flags = parseAuditFlags({ since: opts.since, decision: opts.decision });
  return withStore(opts, async function printAudit(store) {
    const filter = {
      ...(opts.session ? { session: opts.session } : {}),
      ...(flags.since ? { since: flags.since } : {}),
      ...(flags.decision ? { decision: flags.decision } : {}),
    };
    if (opts.export === "jsonl") {
      let chunk: string[] = [];
      for await (const row of exportAudit(store, filter)) {
        chunk.push(JSON.stringify(row));
        if (chunk.length >= EXPORT_CHUNK) {
          writeStdout(`${chunk.join("\n")}\n`);
          chunk = [];
        }
      }
      if (chunk.length) writeStdout(`${chunk.join("\n")}\n`);
      return 0;
    }
    const rows = await queryAudit(store, { ...filter, ...(opts.limit ? { limit: opts.limit } : {}) });
    if (opts.json) {
      writeJson({ audit: rows });
      return 0;
    }
    if (rows.length === 0) {
      writeStdout("no audit rows\n");
      return 0;
    }
    writeStdout(table(["ID", "AT", "KIND", "SESSION", "TOOL", "DECISION", "CODE", "BY", "ANSWER", "MS JUDGE/PARKED/RUN"], rows.map(auditLine)));
    return 0;
  });
}

type Detail = {
  tool?: string;
  inspector?: string;
  rule?: string;
  proof?: boolean;
  answer?: { decision?: string; decided_in?: string; proof?: boolean };
  ms?: { judge?: number; parked?: number; run?: number };
};

/** One table row of an audit row: who decided (inspector and rule), who answered (session, proof), timings in ms. */
function auditLine(r: AuditRow): string[] {
  const d = (r.detail && typeof r.detail === "object" ? r.detail : {}) as Detail;
  const by = d.inspector ? (d.rule ? `${d.inspector}: ${d.rule}` : d.inspector) : "-";
  let answer = "-";
  if (d.answer?.decided_in) answer = `${d.answer.decision} from ${d.answer.decided_in} (${d.answer.proof ? "proof" : "no proof"})`;
  else if (d.answer?.decision) answer = d.answer.decision;
  else if (r.kind === "card_decision" && r.outcome !== "recorded") answer = `${r.outcome} from ${r.session_id ?? "?"} (${d.proof ? "proof" : "no proof"})`;
  const f = (x: number | undefined) => (x === undefined ? "-" : x < 10 ? x.toFixed(2) : x.toFixed(0));
  const ms = d.ms ? `${f(d.ms.judge)}/${f(d.ms.parked)}/${f(d.ms.run)}` : "-";
  return [String(r.id), r.at.replace("T", " ").slice(0, 23), r.kind, r.home_session_id ?? r.session_id ?? "-", d.tool ?? "-", r.decision ?? "-", r.code ?? "-", by, answer, ms];
}
