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

export default function floorTask(task: { mode: "quickjs" | "noop" }): number {
  if (task.mode === "noop") return 2;
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
