/**
 * @module cli/terminal-arm
 * What keeps type-ahead from answering a card in a terminal (`airlock attach`, the terminal approver of an
 * attended `airlock run`): keys typed before the card was drawn, or within {@link ARM_MS} of it, never answer it.
 */

/** How long a shown card ignores keys before one can answer it, ms (the console's inert guard; opencode uses 350 ms). */
export const ARM_MS = 400;

/**
 * A function that drops what was typed on terminal `fd` but not yet read (`tcflush(fd, TCIFLUSH)` from libc
 * through bun:ffi), or one that does nothing where libc cannot be opened (the arm delay still drops keys).
 */
export async function terminalFlusher(fd: number): Promise<() => void> {
  try {
    const { dlopen, FFIType } = await import("bun:ffi");
    const libc = dlopen("libc.so.6", { tcflush: { args: [FFIType.i32, FFIType.i32], returns: FFIType.i32 } });
    return () => void libc.symbols.tcflush(fd, 0); // TCIFLUSH = 0 on Linux
  } catch {
    return () => {};
  }
}
