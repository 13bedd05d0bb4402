/**
 * @module test/preload
 * Loaded before every test file (bunfig.toml `[test] preload`): a global `afterAll` that removes the
 * temp folders registered with test/cleanup.ts once the file's tests are over (under `--parallel`,
 * which isolates files; once the whole run is over otherwise).
 */
import { afterAll } from "bun:test";
import { removeRegisteredFolders } from "./cleanup.ts";

afterAll(removeRegisteredFolders);
