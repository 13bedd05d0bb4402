/**
 * @module build/tinypool-entry
 * tinypool's worker entry shim for the compiled binary (stack-notes §1). tinypool starts
 * `new Worker(<its own dir>/../entry/worker.js)`; inside the binary that is `<bundle root>/entry/worker.js`.
 * build.ts maps this file's text to that virtual path, so no top-level `entry/` folder is needed.
 */
import "../node_modules/tinypool/dist/entry/worker.js";
