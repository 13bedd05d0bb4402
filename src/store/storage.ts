/**
 * @module store/storage
 * Which storage backend a process uses: the embedded SQLite database in the data dir (default), or a
 * PostgreSQL database named by a URL. The URL comes from `$AIRLOCK_DATABASE_URL` when that is set and
 * not empty, else from the config's `storage:` key. The environment wins so that a deployment can keep
 * the password out of `airlock.yaml` (and override a checked-in file per host), as twelve-factor
 * deployments pass backing-service URLs.
 */
import { AirlockError } from "../errors.ts";
import { isPostgresUrl, redactUrl } from "./pg-url.ts";

/** The environment variable naming the PostgreSQL database; wins over `storage:`. */
export const DATABASE_URL_ENV = "AIRLOCK_DATABASE_URL";

/** The chosen backend: `sqlite` (the data dir's `airlock.db`) or `postgres` with its URL and where it came from. */
export type StorageChoice =
  | { kind: "sqlite" }
  | { kind: "postgres"; url: string; source: "env" | "config" };

/**
 * Chooses the backend from `env` and the config's `storage` value.
 * @throws AirlockError `config_invalid` when `$AIRLOCK_DATABASE_URL` is set but not a `postgres://` /
 *   `postgresql://` URL (the message shows it redacted). `storage:` itself is validated by the config schema.
 */
export function chooseStorage(storage: string | undefined, env: Readonly<Record<string, string | undefined>> = process.env): StorageChoice {
  const fromEnv = env[DATABASE_URL_ENV];
  if (fromEnv !== undefined && fromEnv.trim() !== "") {
    if (!isPostgresUrl(fromEnv.trim())) {
      throw new AirlockError("config_invalid", `$${DATABASE_URL_ENV} (${redactUrl(fromEnv)}) is not a postgres:// or postgresql:// URL; unset it to use the embedded SQLite database`);
    }
    return { kind: "postgres", url: fromEnv.trim(), source: "env" };
  }
  if (storage !== undefined) return { kind: "postgres", url: storage, source: "config" };
  return { kind: "sqlite" };
}
