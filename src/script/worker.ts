/**
 * @module script/worker
 * The sandbox worker entry (a tinypool task module). Compiles the QuickJS WASM module once per
 * worker (singlefile sync variant) and gives each script its own module *instance* with its own
 * capped `WebAssembly.Memory` (script/instances.ts): a script's memory, or a QuickJS abort, touches
 * only that script. Many scripts may be in flight on one worker: while one waits on a tool call,
 * others run.
 */
import { threadId } from "node:worker_threads";
import Tinypool from "tinypool";
import { Instances } from "./instances.ts";
import { HostMessage, METER, ScriptTask, WorkerSettings, type WorkerOutcome } from "./protocol.ts";
import { ScriptRun } from "./vm.ts";

const settings = WorkerSettings.parse(Tinypool.workerData ?? { memoryMb: 64, stackKb: 512 });
const instances = await Instances.create(settings.memoryMb);

/**
 * Runs one script task to its end, on an instance of its own. Never throws for guest behaviour:
 * limits and guest errors are `{ok: false, error}` outcomes. A failed instance is dropped here (it
 * never reaches another script): the worker itself stays fine.
 */
export default async function runScriptTask(raw: unknown): Promise<WorkerOutcome> {
  const task = ScriptTask.parse(raw);
  const meter = new Float64Array(task.meter);
  meter[METER.threadId] = threadId;
  const port = task.port as unknown as import("node:worker_threads").MessagePort;
  const inst = await instances.take();
  const run = new ScriptRun(inst.module, {
    code: task.code,
    limits: task.limits,
    memoryBytes: settings.memoryMb * 2 ** 20,
    stackBytes: settings.stackKb * 1024,
    meter,
    memoryExhausted: () => inst.exhausted(),
    post: (msg) => port.postMessage(msg),
  });
  port.on("message", (raw: unknown) => {
    const msg = HostMessage.safeParse(raw);
    if (!msg.success) return;
    if (msg.data.t === "reply") run.reply(msg.data.id, msg.data.payload);
    else run.cancel();
  });
  run.start();
  const { fatal, ...outcome } = await run.done;
  port.close();
  instances.give(inst, !fatal);
  return outcome;
}
