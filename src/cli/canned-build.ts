/**
 * @module cli/canned-build
 * The compiled binary's build id, recorded at build time (build/build.ts): a SHA-256 over every file under
 * `src/` and the package version, so a binary built from other code has another id. It keys the
 * validated-config cache of `airlock run`'s early request (cli/early-request.ts): a config validated by one
 * build is never taken as valid by another. `null` from source, where {@link treeDigest} of `src/config/`
 * (the config's schema and loader) stands in for it.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

/** The binary's build id (hex SHA-256); `null` when running from source. */
export const BUILD_ID: string | null = null;

/**
 * A SHA-256 (hex) over the relative path and bytes of every regular file under `dir`, recursively, in sorted
 * order, and `salt`. Symbolic links and other non-regular entries are skipped.
 * @throws Error when `dir` cannot be read.
 */
export function treeDigest(dir: string, salt: string): string {
  const h = new Bun.CryptoHasher("sha256");
  h.update(salt);
  const walk = (rel: string): void => {
    const entries = readdirSync(join(dir, rel), { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const e of entries) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) walk(r);
      else if (e.isFile()) {
        h.update(`\0${r}\0`);
        h.update(readFileSync(join(dir, r)));
      }
    }
  };
  walk("");
  return h.digest("hex");
}

/** The module text that replaces this one in the compiled binary, holding `id`. */
export function buildIdModule(id: string): string {
  return `export const BUILD_ID = ${JSON.stringify(id)};\nexport function treeDigest() { throw new Error("not in the binary"); }\nexport function buildIdModule() { throw new Error("not in the binary"); }\n`;
}
