/**
 * @module fleet/role
 * What one `airlock serve` does in a fleet (`--role`, SPEC §5.8): `all` (the default) serves the API and
 * runs turns and schedules; `api` serves the API, SSE and console, queues the turns it is asked for and
 * only enqueues schedule fires; `worker` serves no API and runs queued turns and schedule fires. A role
 * other than `all` needs a store several processes share (PostgreSQL): on SQLite one process owns the file.
 */
import { AirlockError, assertNever } from "../errors.ts";
import type { SqlDialect } from "../store/sql.ts";

/** The roles of `airlock serve --role`. */
export const SERVE_ROLES = ["all", "api", "worker"] as const;
export type ServeRole = (typeof SERVE_ROLES)[number];

/**
 * Null when `role` may run on a store of `dialect`, else the refusal (`usage`, exit 2, saying what to do).
 * `api` and `worker` need PostgreSQL: on SQLite one process owns the database and serves every role.
 */
export function roleRefusal(role: ServeRole, dialect: SqlDialect): AirlockError | null {
  switch (role) {
    case "all":
      return null;
    case "api":
    case "worker":
      if (dialect === "postgres") return null;
      return new AirlockError(
        "usage",
        `--role ${role} needs a store several processes share (storage: postgres://…): on SQLite one airlock serve owns the database and serves every role; drop --role or pass --role all`,
      );
    default:
      return assertNever(role);
  }
}

/** Whether a node of `role` claims queued turns and works schedule jobs (`worker`, `all`) or only serves the API (`api`). */
export function runsTurns(role: ServeRole): boolean {
  switch (role) {
    case "all":
    case "worker":
      return true;
    case "api":
      return false;
    default:
      return assertNever(role);
  }
}

/** Whether a node of `role` serves the HTTP API, SSE and console (`api`, `all`); a `worker` binds no port. */
export function servesApi(role: ServeRole): boolean {
  switch (role) {
    case "all":
    case "api":
      return true;
    case "worker":
      return false;
    default:
      return assertNever(role);
  }
}
