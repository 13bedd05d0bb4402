/**
 * @module server/routes/schedules
 * The scheduler's HTTP routes (SPEC §6): `GET/POST /schedules`, `DELETE /schedules/:id`,
 * `POST /schedules/:id/run`, `GET /schedules/:id/runs`, `GET /runs` (every run, removed schedules' included)
 * and `GET /runs/:id` (a run's result object, SPEC §7).
 * Mounted behind the auth middleware by server/app.ts. Bodies are zod-validated (400 naming the path).
 */
import { readRegularFile } from "../../config/paths.ts";
import { isAbsolute, join } from "node:path";
import { Hono, type Context } from "hono";
import { z } from "zod";
import { formatZodIssues } from "../../config/load.ts";
import { AirlockError } from "../../errors.ts";
import { MAX_RECIPE_FILE_BYTES, recipeReadProblem } from "../../scheduler/recipe.ts";
import { schedulePortFor, type SchedulePort, type SchedulerHost } from "../../scheduler/service.ts";
import type { Run } from "../../scheduler/store.ts";
import type { RunList, RunView, Schedule, ScheduleDeleted, ScheduleList } from "../api-schemas.ts";
import { apiErrorHandler, errorResponse } from "../error-response.ts";

/** `POST /schedules` body. Give the recipe's absolute path (read by the server) and/or its text. */
export const NewScheduleBody = z.strictObject({
  cron: z.string().min(1),
  /** Absolute path of the recipe file; relative paths inside it resolve against its directory. */
  recipe_path: z.string().min(1),
  /** The recipe YAML; when absent the server reads `recipe_path`. */
  recipe_text: z.string().min(1).optional(),
  name: z.string().min(1).optional(),
  params: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])).optional(),
});
export type NewScheduleBody = z.infer<typeof NewScheduleBody>;

/**
 * A run as `GET /runs/:id` serves it: the headless result object (SPEC §7) at the top level once the run
 * finished, plus `run_id`, `schedule_id`, `schedule_removed`, `trigger`, `started_at`, `finished_at` and `reason`. While it goes on,
 * or when it was skipped, `status` is `running` / `skipped` and `result` is null.
 */
export function runView(run: Run): RunView {
  const base = {
    session_id: run.session_id,
    status: run.status,
    result: null as unknown,
    tool_calls: null as unknown,
    refused_calls: [] as unknown[],
    error: null as unknown,
    duration_ms: null as unknown,
  };
  const obj = run.result ? { ...base, ...run.result } : base;
  // The stored status wins over the result object's only for states the object cannot express.
  if (run.status === "interrupted" || run.status === "skipped" || run.status === "running") obj.status = run.status;
  return { ...obj, run_id: run.id, schedule_id: run.schedule_id, schedule_removed: run.schedule_removed, trigger: run.trigger, started_at: run.started_at, finished_at: run.finished_at, reason: run.reason };
}

/** The query of the run lists (`GET /runs`, `GET /schedules/:id/runs`): `limit`, digits, an integer 1–1000 (absent: 100). */
export const RunsQuery = z.object({
  limit: z
    .string()
    .regex(/^\d{1,7}$/)
    .transform(Number)
    .pipe(z.number().int().min(1).max(1000))
    .optional(),
});

/** `?limit=N` of the run lists, read with {@link RunsQuery}: an integer 1–1000, default 100. @throws AirlockError `bad_request`. */
function runsLimit(c: Context): number {
  const r = RunsQuery.safeParse({ limit: c.req.query("limit") });
  if (!r.success) throw new AirlockError("bad_request", "query: limit: expected an integer from 1 to 1000");
  return r.data.limit ?? 100;
}

async function jsonBody(c: Context): Promise<unknown> {
  try {
    return await c.req.json();
  } catch {
    throw new AirlockError("bad_request", "the request body is not valid JSON; send Content-Type: application/json with a JSON object");
  }
}

/**
 * The schedule routes over the runtime's schedule port (scheduler/service.ts `schedulePortFor`: the
 * pg-boss driver on PostgreSQL, the embedded scheduler on SQLite; started here, stopped when the runtime closes).
 */
export function schedulesRoutes(rt: SchedulerHost, scheduler: SchedulePort = schedulePortFor(rt)): Hono {
  const app = new Hono();
  // the same renderer as the app's (these routes also run on their own, in tests)
  app.onError(apiErrorHandler({ dbPath: join(rt.dataDir, "airlock.db") }));

  app.get("/schedules", async (c) => c.json({ schedules: await scheduler.list() } satisfies ScheduleList));

  app.post("/schedules", async (c) => {
    const parsed = NewScheduleBody.safeParse(await jsonBody(c), { reportInput: true });
    if (!parsed.success) {
      const lines = formatZodIssues(parsed.error.issues, "body", { schema: NewScheduleBody });
      throw new AirlockError("bad_request", lines.join("; "), { issues: lines });
    }
    const b = parsed.data;
    if (!isAbsolute(b.recipe_path)) throw new AirlockError("bad_request", `body: recipe_path: expected an absolute path, got ${JSON.stringify(b.recipe_path)}`);
    let text = b.recipe_text;
    if (text === undefined) {
      try {
        // never a blocking open on the serving thread: a FIFO there would freeze every session (config/paths.ts)
        // and at most MAX_RECIPE_FILE_BYTES (recipe_text is capped by limits.max_body_bytes): a sparse file of gigabytes
        // (any caller with the API token, a tool process included, can make one and name it) would have this thread read all of it
        text = readRegularFile(b.recipe_path, { maxBytes: MAX_RECIPE_FILE_BYTES }).toString("utf8");
      } catch (e) {
        throw new AirlockError("recipe_invalid", `recipe ${b.recipe_path}: the server cannot read it (${recipeReadProblem(e)}); send recipe_text`);
      }
    }
    const s = await scheduler.add({ cron: b.cron, recipe_path: b.recipe_path, recipe_text: text, ...(b.name ? { name: b.name } : {}), ...(b.params ? { params: b.params } : {}) });
    return c.json(s satisfies Schedule, 201);
  });

  app.get("/schedules/:id", async (c) => {
    const s = await scheduler.get(c.req.param("id"));
    if (!s) throw new AirlockError("not_found", `no schedule ${c.req.param("id")}; list schedules with GET /schedules`);
    return c.json(s satisfies Schedule);
  });

  app.delete("/schedules/:id", async (c) => {
    const id = c.req.param("id");
    if (!(await scheduler.remove(id))) throw new AirlockError("not_found", `no schedule ${id}; list schedules with GET /schedules`);
    return c.json({ id, deleted: true } satisfies ScheduleDeleted);
  });

  app.post("/schedules/:id/run", async (c) => {
    const run = await scheduler.fireNow(c.req.param("id"));
    if (run.status === "skipped") {
      const skipped = new AirlockError("conflict", `${run.reason}; the fire was recorded as skipped (${run.id}); try again when it finished`, { run: runView(run) });
      return errorResponse(c, skipped);
    }
    return c.json(runView(run), 202);
  });

  app.get("/schedules/:id/runs", async (c) => {
    return c.json({ runs: (await scheduler.runs(c.req.param("id"), runsLimit(c))).map(runView) } satisfies RunList);
  });

  app.get("/runs", async (c) => {
    return c.json({ runs: (await scheduler.allRuns(runsLimit(c))).map(runView) } satisfies RunList);
  });

  app.get("/runs/:id", async (c) => {
    const run = await scheduler.run(c.req.param("id"));
    if (!run) throw new AirlockError("not_found", `no run ${c.req.param("id")}; a schedule's runs are listed at GET /schedules/:id/runs`);
    return c.json(runView(run));
  });

  return app;
}
