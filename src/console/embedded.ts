/**
 * @module console/embedded
 * The console's bundled page (HTML, JS, CSS). In the source tree it is `null` and the assets are bundled on
 * first request (development); build/build.ts replaces this module in the compiled binary with the bundle's
 * text, so the binary never bundles at run time.
 */
import type { ConsoleAssets } from "./bundle.ts";

/** The assets embedded by build/build.ts, or null when running from source. */
export const EMBEDDED: ConsoleAssets | null = null;
