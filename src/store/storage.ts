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
 *   `postgresql://` URL, or when either setting's URL does not parse (a port outside 1–65535, a broken
 *   host); the message names the setting and shows the URL redacted. `storage:`'s scheme is also checked
 *   by the config schema.
 */
export function chooseStorage(storage: string | undefined, env: Readonly<Record<string, string | undefined>> = process.env): StorageChoice {
  const fromEnv = env[DATABASE_URL_ENV];
  if (fromEnv !== undefined && fromEnv.trim() !== "") {
    if (!isPostgresUrl(fromEnv.trim())) {
      throw new AirlockError("config_invalid", `$${DATABASE_URL_ENV} (${redactUrl(fromEnv)}) is not a postgres:// or postgresql:// URL; unset it to use the embedded SQLite database`);
    }
    checkParses(fromEnv.trim(), `$${DATABASE_URL_ENV}`);
    return { kind: "postgres", url: fromEnv.trim(), source: "env" };
  }
  if (storage !== undefined) {
    checkParses(storage, "storage:");
    return { kind: "postgres", url: storage, source: "config" };
  }
  return { kind: "sqlite" };
}

/**
 * Refuses, before the driver sees it, a URL the PostgreSQL driver (Bun.SQL) cannot use: one that does
 * not parse as a URL (e.g. port 99999, a non-numeric port, an unclosed `[` host) or names port 0.
 * @throws AirlockError `config_invalid` naming `setting` (`storage:` or `$AIRLOCK_DATABASE_URL`), the URL redacted.
 */
function checkParses(url: string, setting: string): void {
  let port: string;
  try {
    port = new URL(url).port;
  } catch {
    throw new AirlockError("config_invalid", `${setting} ${redactUrl(url)} is not a valid URL (check the port is 1–65535 and the host, user and password are percent-encoded): postgres://user:password@host:5432/database`);
  }
  if (port !== "" && (Number(port) < 1 || Number(port) > 65535)) {
    throw new AirlockError("config_invalid", `${setting} ${redactUrl(url)} names port ${port}; a port is 1–65535 (PostgreSQL's default is 5432)`);
  }
}
