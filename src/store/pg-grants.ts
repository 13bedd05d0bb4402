/**
 * @module store/pg-grants
 * What the PostgreSQL user of `storage:` / `$AIRLOCK_DATABASE_URL` is allowed to create, read before
 * anything is created: the migrations need CREATE on the schema the tables go in (`current_schema()`,
 * `public` by default; PostgreSQL 15 no longer grants it to every user), and the schedule queue (pg-boss)
 * needs CREATE on the database for its own schema `pgboss` (or, once that schema exists, USAGE and CREATE on
 * it). Used by `openChosen` (store/open.ts), `airlock serve` (cli/serve.ts) and `airlock doctor`, so a
 * missing grant is `storage_unavailable` naming the GRANT, never `internal: permission denied …`.
 */
import { AirlockError } from "../errors.ts";
import type { Sql } from "./sql.ts";

/** The grants of the connected user that airlock needs. */
export interface PgGrants {
  /** `current_user`. */
  user: string;
  /** `current_database()`. */
  database: string;
  /** `current_schema()`: where the migrations create tables; null when no schema of the search_path exists. */
  schema: string | null;
  /** CREATE on `schema` (false when `schema` is null). */
  schemaCreate: boolean;
  /** pg-boss can set up and use its schema: it exists with USAGE and CREATE, or CREATE on the database. */
  queueUsable: boolean;
  /** Whether the `pgboss` schema already exists. */
  queueSchemaExists: boolean;
}

/** Reads {@link PgGrants} in one statement. @throws what the `Sql` throws (`storage_unavailable` when unreachable). */
export async function readPgGrants(sql: Sql): Promise<PgGrants> {
  const r = await sql.get<{ u: string; d: string; s: string | null; sc: number | null; dc: number; qs: number; qu: number | null }>(
    `SELECT current_user AS u, current_database() AS d, current_schema() AS s,
            CASE WHEN current_schema() IS NULL THEN false ELSE has_schema_privilege(current_schema(), 'CREATE') END AS sc,
            has_database_privilege(current_database(), 'CREATE') AS dc,
            EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = 'pgboss') AS qs,
            CASE WHEN EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = 'pgboss')
                 THEN has_schema_privilege('pgboss', 'USAGE') AND has_schema_privilege('pgboss', 'CREATE') END AS qu`,
  );
  if (!r) throw new Error("reading the database user's grants returned no row");
  const queueSchemaExists = Boolean(r.qs);
  return {
    user: r.u,
    database: r.d,
    schema: r.s,
    schemaCreate: Boolean(r.sc),
    queueSchemaExists,
    queueUsable: queueSchemaExists ? Boolean(r.qu) : Boolean(r.dc),
  };
}

/** `"name"` quoted as a PostgreSQL identifier. */
function ident(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/**
 * The refusal when migrations are due but the user may not create tables, else null.
 * @returns AirlockError `storage_unavailable` naming the GRANT to run (as the database's owner or a superuser).
 */
export function migrationGrantError(g: PgGrants, shownUrl: string): AirlockError | null {
  if (g.schemaCreate) return null;
  if (g.schema === null) {
    return new AirlockError("storage_unavailable", `PostgreSQL ${shownUrl}: no schema of user ${g.user}'s search_path exists, so airlock's tables cannot be created; create one (CREATE SCHEMA ${ident(g.user)} AUTHORIZATION ${ident(g.user)}) or fix search_path`, { reason: "grant" });
  }
  return new AirlockError(
    "storage_unavailable",
    `PostgreSQL ${shownUrl}: user ${g.user} may not create tables in schema ${g.schema} (PostgreSQL 15 grants no CREATE on public by default), so airlock cannot migrate the database; as its owner or a superuser run: GRANT CREATE ON SCHEMA ${ident(g.schema)} TO ${ident(g.user)}; (or make ${g.user} the database's owner: ALTER DATABASE ${ident(g.database)} OWNER TO ${ident(g.user)})`,
    { reason: "grant" },
  );
}

/**
 * The refusal when the schedule queue (pg-boss, schema `pgboss`) cannot be set up or used, else null.
 * @returns AirlockError `storage_unavailable` naming the GRANT to run.
 */
export function queueGrantError(g: PgGrants, shownUrl: string): AirlockError | null {
  if (g.queueUsable) return null;
  const grant = g.queueSchemaExists
    ? `GRANT USAGE, CREATE ON SCHEMA pgboss TO ${ident(g.user)};`
    : `GRANT CREATE ON DATABASE ${ident(g.database)} TO ${ident(g.user)};`;
  return new AirlockError(
    "storage_unavailable",
    `PostgreSQL ${shownUrl}: user ${g.user} cannot ${g.queueSchemaExists ? "use the schedule queue's schema pgboss" : "create the schedule queue's schema pgboss"}, so schedules would never fire; as the database's owner or a superuser run: ${grant} (or make ${g.user} the database's owner)`,
    { reason: "grant" },
  );
}
