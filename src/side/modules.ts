/**
 * @module side/modules
 * The rarely used big dependencies, each loaded on first use: `side.mcp()` (tool/mcp/sdk.ts), `side.acp()`
 * (`airlock acp`), `side.pgBoss()` (PostgreSQL mode's scheduler), and `quickjsWasm()`, the compiled QuickJS
 * module (script/instances.ts). From source each is a plain dynamic `import()` and `quickjsWasm()` is
 * `undefined` (the QuickJS package compiles its own embedded bytes). In the compiled binary build/side.ts
 * replaces this file: each is then a side bundle embedded zstd-compressed, checked against its build-time
 * SHA-256 and imported from memory (side/load.ts), and `quickjsWasm()` compiles the embedded, checked
 * WASM bytes (the package's own copy is stripped from the bundle). The names here are the build's contract.
 * @throws (in the binary) AirlockError `binary_corrupt` when an embedded file is not what was built.
 */
export const side = {
  mcp: (): Promise<typeof import("./mcp.ts")> => import("./mcp.ts"),
  acp: (): Promise<typeof import("@agentclientprotocol/sdk")> => import("@agentclientprotocol/sdk"),
  pgBoss: (): Promise<typeof import("pg-boss")> => import("pg-boss"),
};

/** The names of {@link side}, for the binary's self-check (`airlock --check-embedded`). */
export const SIDE_NAMES = Object.keys(side) as (keyof typeof side)[];

/**
 * The compiled QuickJS WASM module and its memory layout (side/quickjs-layout.ts), or `undefined` when the QuickJS package
 * supplies its own (from source).
 */
export async function quickjsWasm(): Promise<{ module: WebAssembly.Module; layout: import("./quickjs-layout.ts").MemoryLayout | null } | undefined> {
  return undefined;
}
