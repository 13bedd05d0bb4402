/**
 * @module console/bundle
 * Bundles the console page (src/console/app.ts with Preact + htm, index.html, style.css) into one HTML
 * document, one JS file and one CSS file with `Bun.build`. Used by build/build.ts (embedded in the
 * binary) and, when running from source, on the first request for the page.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";

/** The console's three files as text. */
export interface ConsoleAssets {
  html: string;
  js: string;
  css: string;
}

const DIR = import.meta.dir;

/**
 * Bundles the page (minified ESM for browsers).
 * @throws Error naming the bundler's messages when the build fails.
 */
export async function bundleConsole(): Promise<ConsoleAssets> {
  const r = await Bun.build({
    entrypoints: [join(DIR, "app.ts")],
    target: "browser",
    format: "esm",
    minify: true,
    throw: false,
  });
  if (!r.success || !r.outputs[0]) throw new Error(`console bundle failed:\n${r.logs.map(String).join("\n")}`);
  return {
    html: readFileSync(join(DIR, "index.html"), "utf8"),
    js: await r.outputs[0].text(),
    css: readFileSync(join(DIR, "style.css"), "utf8"),
  };
}

/** The module text that replaces console/embedded.ts in the compiled binary. */
export function embeddedModule(a: ConsoleAssets): string {
  return `export const EMBEDDED = ${JSON.stringify(a)};\n`;
}
