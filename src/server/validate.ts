/**
 * @module server/validate
 * Request bodies at the HTTP boundary: JSON, then a zod schema. Failures are 400 `bad_request`
 * whose message names the failing field (via `formatZodIssues`).
 */
import type { Context } from "hono";
import type { z } from "zod";
import { formatZodIssues } from "../config/load.ts";
import { AirlockError } from "../errors.ts";

/**
 * Reads the JSON body of `c` and validates it with `schema`. An empty body counts as `{}`.
 * @throws AirlockError `bad_request` naming the field (e.g. `body: message: required key is missing (expected string)`).
 */
export async function parseBody<S extends z.ZodType>(c: Context, schema: S): Promise<z.infer<S>> {
  const text = await c.req.text();
  let raw: unknown = {};
  if (text.trim() !== "") {
    try {
      raw = JSON.parse(text);
    } catch (e) {
      throw new AirlockError("bad_request", `body: not valid JSON (${(e as Error).message}); send a JSON object with Content-Type: application/json`);
    }
  }
  const r = schema.safeParse(raw, { reportInput: true });
  if (!r.success) {
    const lines = formatZodIssues(r.error.issues, "body", { schema });
    throw new AirlockError("bad_request", lines.join("; "), { issues: lines, fields: r.error.issues.map((i) => i.path.join(".")) });
  }
  return r.data;
}

/**
 * Validates the query string of `c` (each key's first value, as a string) with `schema`.
 * @throws AirlockError `bad_request` naming the parameter (e.g. `query: limit: …`), with `fields`.
 */
export function parseQuery<S extends z.ZodType>(c: Context, schema: S): z.infer<S> {
  const r = schema.safeParse(c.req.query(), { reportInput: true });
  if (!r.success) {
    const lines = formatZodIssues(r.error.issues, "query", { schema });
    throw new AirlockError("bad_request", lines.join("; "), { issues: lines, fields: r.error.issues.map((i) => i.path.join(".")) });
  }
  return r.data;
}
