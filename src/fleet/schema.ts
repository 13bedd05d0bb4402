/**
 * @module fleet/schema
 * The fleet tables' migrations and card statuses (SPEC §5.8), defined in store/fleet-schema.ts so the
 * store's migration lists can include them; re-exported here for the fleet modules.
 */
export { CARD_STATUSES, FLEET_MIGRATIONS_POSTGRES, FLEET_MIGRATIONS_SQLITE, fleetMigrations, type CardStatus, type Migration } from "../store/fleet-schema.ts";
