/**
 * @module config/warnings.test
 * `fleet:` is read only by several processes on PostgreSQL: set on the embedded SQLite store it is a
 * start-up warning (like a provider key the provider ignores); not with `storage:` or `$AIRLOCK_DATABASE_URL`,
 * and not when left at its defaults.
 */
import { expect, test } from "bun:test";
import { Config } from "./schema.ts";
import { configWarnings } from "./warnings.ts";

const fleetWarning = (w: string[]) => w.filter((l) => l.startsWith("fleet"));

test("fleet: set on SQLite warns; on PostgreSQL (storage: or the environment) or at its defaults it does not", () => {
  const withFleet = Config.parse({ fleet: { lease_ttl_seconds: 8 } });
  const onSqlite = fleetWarning(configWarnings(withFleet, "/tmp", null, {}));
  expect(onSqlite).toHaveLength(1);
  expect(onSqlite[0]).toContain("is ignored: the store is the embedded SQLite database");
  expect(fleetWarning(configWarnings(Config.parse({ fleet: { lease_ttl_seconds: 8 }, storage: "postgres://u@h/d" }), "/tmp", null, {}))).toEqual([]);
  expect(fleetWarning(configWarnings(withFleet, "/tmp", null, { AIRLOCK_DATABASE_URL: "postgres://u@h/d" }))).toEqual([]);
  expect(fleetWarning(configWarnings(Config.parse({}), "/tmp", null, {}))).toEqual([]);
});
