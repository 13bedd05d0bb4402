/**
 * @module test/preload
 * Loaded before every test file (bunfig.toml `[test] preload`): a global `afterAll` that removes the
 * temp folders registered with test/cleanup.ts once the whole run is over.
 */
import { afterAll } from "bun:test";
import { removeRegisteredFolders } from "./cleanup.ts";

afterAll(removeRegisteredFolders);
