/**
 * @module fleet/role
 * What one `airlock serve` does in a fleet (`--role`, SPEC §5.8): `all` (the default) serves the API and
 * runs turns and schedules; `api` only serves the API and SSE; `worker` only runs turns. A role other
 * than `all` needs a store several processes share (PostgreSQL): on SQLite one process owns the file.
 */
import { AirlockError, assertNever } from "../errors.ts";
import type { SqlDialect } from "../store/sql.ts";

/** The roles of `airlock serve --role`. */
export const SERVE_ROLES = ["all", "api", "worker"] as const;
export type ServeRole = (typeof SERVE_ROLES)[number];

/**
 * Null when `role` may run on a store of `dialect`, else the refusal (`usage`, exit 2, saying what to do).
 * `api` and `worker` are refused on SQLite (one process owns the database); on PostgreSQL they are refused
 * too until the split runtime lands (fail closed: an `api` node must never run a turn it was not meant to).
 */
export function roleRefusal(role: ServeRole, dialect: SqlDialect): AirlockError | null {
  switch (role) {
    case "all":
      return null;
    case "api":
    case "worker":
      if (dialect === "sqlite") {
        return new AirlockError(
          "usage",
          `--role ${role} needs a store several processes share (storage: postgres://…): on SQLite one airlock serve owns the database and serves every role; drop --role or pass --role all`,
        );
      }
      return new AirlockError("usage", `--role ${role} is not available yet on this build: run every node with --role all (the default); each still shares cards and leases through PostgreSQL`);
    default:
      return assertNever(role);
  }
}
