/**
 * @module sandbox/worker
 * The sandbox worker entry (a tinypool task module). Loads one QuickJS WASM module per worker, from
 * the singlefile sync variant, over a capped `WebAssembly.Memory` (setMemoryLimit alone does not
 * bound the total — stack-notes §2), then runs each script task in a fresh runtime (sandbox/vm.ts).
 * Many scripts may be in flight on one worker: while one waits on a tool call, others run.
 */
import { threadId } from "node:worker_threads";
import variant from "@jitl/quickjs-singlefile-mjs-release-sync";
import { newQuickJSWASMModuleFromVariant, newVariant } from "quickjs-emscripten-core";
import Tinypool from "tinypool";
import { HostMessage, METER, ScriptTask, WorkerSettings, type WorkerOutcome } from "./protocol.ts";
import { ScriptRun } from "./vm.ts";

const PAGE = 65536;
const settings = WorkerSettings.parse(Tinypool.workerData ?? { memoryMb: 64, stackKb: 512 });
const maxPages = settings.memoryMb * 16;
const wasmMemory = new WebAssembly.Memory({ initial: Math.min(256, maxPages), maximum: maxPages });
const QuickJS = await newQuickJSWASMModuleFromVariant(newVariant(variant, { wasmMemory }));

/**
 * Runs one script task to its end. Never throws for guest behaviour: limits and guest errors are
 * `{ok: false, error}` outcomes. `fatal: true` asks the host to replace this worker.
 */
export default async function runScriptTask(raw: unknown): Promise<WorkerOutcome> {
  const task = ScriptTask.parse(raw);
  const meter = new Float64Array(task.meter);
  meter[METER.threadId] = threadId;
  const port = task.port as unknown as import("node:worker_threads").MessagePort;
  const run = new ScriptRun(QuickJS, {
    code: task.code,
    limits: task.limits,
    memoryBytes: settings.memoryMb * 2 ** 20,
    stackBytes: settings.stackKb * 1024,
    meter,
    memoryExhausted: () => wasmMemory.buffer.byteLength >= maxPages * PAGE,
    post: (msg) => port.postMessage(msg),
  });
  port.on("message", (raw: unknown) => {
    const msg = HostMessage.safeParse(raw);
    if (!msg.success) return;
    if (msg.data.t === "reply") run.reply(msg.data.id, msg.data.payload);
    else run.cancel();
  });
  run.start();
  const outcome = await run.done;
  port.close();
  return outcome;
}
