/**
 * @module client/build
 * Bundles the typed client for Node: `client/index.ts` → `client/dist/index.js` (ESM, target node, no
 * dependency: the client's imports from src/ are types only and vanish). Run by `npm run build`, or alone:
 * `bun client/build.ts`. Bun imports `client/index.ts` directly (client/package.json `exports`).
 * @throws Error naming the bundler's messages when the build fails.
 */
import { join } from "node:path";

export const CLIENT_DIR = import.meta.dir;
export const CLIENT_BUNDLE = join(CLIENT_DIR, "dist", "index.js");

/** Builds `client/dist/index.js`; resolves with its size, bytes. */
export async function buildClient(): Promise<number> {
  const r = await Bun.build({ entrypoints: [join(CLIENT_DIR, "index.ts")], outdir: join(CLIENT_DIR, "dist"), target: "node", format: "esm", packages: "external" });
  if (!r.success) throw new Error(`client build failed: ${r.logs.map(String).join("\n")}`);
  const out = r.outputs[0]!;
  return out.size;
}

if (import.meta.main) {
  const bytes = await buildClient();
  console.error(`client/dist/index.js: ${bytes} bytes`);
}
