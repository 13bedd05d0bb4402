/**
 * @module script/worker
 * The sandbox worker entry (a tinypool task module). Instantiates the QuickJS WASM module the pool
 * compiled (singlefile sync variant) and gives each script its own module *instance* with its own
 * capped `WebAssembly.Memory` (script/instances.ts): a script's memory, or a QuickJS abort, touches
 * only that script. The pool sends a worker one script at a time (script/pool.ts), so a script stuck in
 * a native call blocks only its own thread; the code here still copes with several.
 */
import { threadId } from "node:worker_threads";
import Tinypool from "tinypool";
import { Instances } from "./instances.ts";
import { assertNever } from "../errors.ts";
import { HostMessage, METER, ScriptTask, WorkerSettings, type WorkerMessage, type WorkerOutcome } from "./protocol.ts";
import { ScriptRun } from "./vm.ts";

const settings = WorkerSettings.parse(Tinypool.workerData ?? { memoryMb: 64, stackKb: 512 });
/** Made at the first task, from the module the pool compiled (a worker does not compile QuickJS itself). */
let instances: Promise<Instances> | undefined;

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
  instances ??= Instances.create(settings.memoryMb, task.wasm);
  const pool = await instances;
  const inst = await pool.take();
  const run = new ScriptRun(inst.module, {
    code: task.code,
    limits: task.limits,
    memoryBytes: settings.memoryMb * 2 ** 20,
    stackBytes: settings.stackKb * 1024,
    meter,
    memoryExhausted: () => inst.exhausted(),
    post: (msg) => port.postMessage(msg),
  });
  // Guest code runs only in a run slot the host gave: `go` (the start) or a `reply`. Each ends with
  // `yield` (the script waits on tools again) unless the script ended in it.
  let started = false;
  port.on("message", (raw: unknown) => {
    const msg = HostMessage.safeParse(raw);
    if (!msg.success) return;
    const m = msg.data;
    switch (m.t) {
      case "cancel":
        run.cancel();
        return;
      case "go":
        if (!started) {
          started = true;
          run.start();
        }
        break;
      case "reply":
        run.reply(m.id, m.payload);
        break;
      default:
        assertNever(m, "host message");
    }
    if (!run.finished) port.postMessage({ t: "yield" } satisfies WorkerMessage);
  });
  port.postMessage({ t: "ready" } satisfies WorkerMessage);
  const { fatal, ...outcome } = await run.done;
  port.close();
  pool.give(inst, !fatal);
  return outcome;
}
