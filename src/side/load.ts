/**
 * @module side/load
 * Loads what the compiled binary embeds compressed rather than as code (docs/performance.md, release
 * size): a *side bundle* (one rarely used dependency — the MCP SDK, the ACP SDK, pg-boss — bundled to one
 * ES module at build time, zstd-compressed and embedded as a file) and the QuickJS WASM bytes. Each
 * embedded file is read from the binary, decompressed in memory (`Bun.zstdDecompressSync`) and its
 * SHA-256 compared with the digest build/side.ts recorded when it built it; only then is it used. A side
 * bundle is imported from a `blob:` URL of the checked text, so nothing is written to disk and nothing
 * outside the binary is read (it works with the binary copied alone into an empty directory).
 * Only build/side.ts's generated `side/modules.ts` calls these; from source the packages are imported directly.
 */
import { AirlockError } from "../errors.ts";

/** One embedded file as build/side.ts recorded it. */
export interface Embedded {
  /** Short name (`mcp`, `acp`, `pg-boss`, `quickjs-wasm`), for messages. */
  name: string;
  /** Where the compressed bytes are in the binary (a `/$bunfs/…` path from an `import … with { type: "file" }`). */
  path: string;
  /** Lowercase hex SHA-256 of the decompressed bytes. */
  sha256: string;
  /** Length of the decompressed bytes. */
  bytes: number;
}

/**
 * The decompressed, checked bytes of `e`.
 * @throws AirlockError `binary_corrupt` when the file cannot be read or decompressed, or its length or
 * SHA-256 is not what the build recorded.
 */
export async function embeddedBytes(e: Embedded): Promise<Uint8Array<ArrayBuffer>> {
  let raw: Uint8Array<ArrayBuffer>;
  try {
    raw = new Uint8Array(Bun.zstdDecompressSync(await Bun.file(e.path).bytes()));
  } catch (err) {
    throw new AirlockError("binary_corrupt", `the embedded ${e.name} (${e.path}) cannot be read: ${err instanceof Error ? err.message : String(err)}; download the release again`);
  }
  const digest = new Bun.CryptoHasher("sha256").update(raw).digest("hex");
  if (raw.length !== e.bytes || digest !== e.sha256) {
    throw new AirlockError("binary_corrupt", `the embedded ${e.name} is not what was built (sha256 ${digest}, ${raw.length} bytes; built ${e.sha256}, ${e.bytes} bytes); download the release again`);
  }
  return raw;
}

const modules = new Map<string, Promise<unknown>>();

/**
 * The ES module of side bundle `e`, loaded once per process (later calls share the first load; a failed
 * load is not cached). @throws AirlockError `binary_corrupt` (see {@link embeddedBytes}); the module's own
 * evaluation errors as thrown.
 */
export function loadSide<T>(e: Embedded): Promise<T> {
  let p = modules.get(e.name);
  if (!p) {
    p = (async () => {
      const url = URL.createObjectURL(new Blob([await embeddedBytes(e)], { type: "text/javascript" }));
      try {
        return await import(url);
      } finally {
        URL.revokeObjectURL(url);
      }
    })();
    p.catch(() => modules.delete(e.name));
    modules.set(e.name, p);
  }
  return p as Promise<T>;
}
