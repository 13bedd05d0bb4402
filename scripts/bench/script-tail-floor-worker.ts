/**
 * @module scripts/bench/script-tail-floor-worker
 * The floor of `script-tail.ts`: a tinypool task module with no airlock code. Each task makes a bare QuickJS runtime
 * and context on the thread's one module instance (quickjs-emscripten, the same singlefile sync variant as
 * src/script/instances.ts), evaluates `1 + 1`, frees both and returns the number. `mode: "noop"` returns at once
 * (tinypool alone).
 */
import variant from "@jitl/quickjs-singlefile-mjs-release-sync";
import { newQuickJSWASMModuleFromVariant } from "quickjs-emscripten-core";

const mod = await newQuickJSWASMModuleFromVariant(variant);

/** Keeps this thread busy for `us` µs (the floor's stand-in for work airlock does in or after a task). */
function busy(us: number): void {
  const end = performance.now() + us / 1000;
  while (performance.now() < end);
}

/**
 * One floor task. `workUs`: µs of busy work inside the task, before its runtime is made; `afterUs`: µs of busy work
 * queued with `setImmediate` after the task returned (while its outcome travels to the host and the next task comes).
 */
export default function floorTask(task: { mode: "quickjs" | "noop"; workUs?: number; afterUs?: number }): number {
  if (task.mode === "noop") return 2;
  if (task.workUs) busy(task.workUs);
  if (task.afterUs) setImmediate(busy, task.afterUs);
  const rt = mod.newRuntime();
  rt.setMemoryLimit(64 * 2 ** 20);
  rt.setMaxStackSize(512 * 1024);
  const ctx = rt.newContext();
  const r = ctx.evalCode("1 + 1");
  let n = 0;
  if (r.error) r.error.dispose();
  else {
    n = ctx.getNumber(r.value);
    r.value.dispose();
  }
  ctx.dispose();
  rt.dispose();
  return n;
}
