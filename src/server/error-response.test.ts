/**
 * @module server/error-response.test
 * The one HTTP error renderer: every code answers with its `HTTP_STATUS` row and `{error, ...details, message}`;
 * anything else is `internal` 500; a SQLite failure of a full data dir is `data_dir_unusable` 503; unknown routes 404.
 */
import { describe, expect, test } from "bun:test";
import { Hono } from "hono";
import { AirlockError, ERROR_CODES, HTTP_STATUS } from "../errors.ts";
import { apiErrorHandler, notFoundResponse } from "./error-response.ts";

/** An app whose `GET /throw` throws what `make` returns, rendered by the shared handler. */
function appThrowing(make: () => unknown, dbPath?: string, sharedStore?: boolean): Hono {
  const app = new Hono();
  app.onError(apiErrorHandler({ ...(dbPath ? { dbPath } : {}), ...(sharedStore ? { sharedStore } : {}) }));
  app.notFound(notFoundResponse);
  app.get("/throw", () => {
    throw make();
  });
  return app;
}

/** Runs `fn` with console.error silenced (the renderer logs internal errors). */
async function quiet<T>(fn: () => Promise<T>): Promise<T> {
  const saved = console.error;
  console.error = () => {};
  try {
    return await fn();
  } finally {
    console.error = saved;
  }
}

describe("server/error-response.errorResponse", () => {
  test("every code answers with its status from HTTP_STATUS, its code, its details and its message", async () => {
    const seen: Record<string, [number, unknown]> = {};
    const want: Record<string, [number, unknown]> = {};
    await quiet(async () => {
      for (const code of ERROR_CODES) {
        const res = await appThrowing(() => new AirlockError(code, `the ${code} message`, { path: "/x" })).request("/throw");
        seen[code] = [res.status, await res.json()];
        want[code] = [HTTP_STATUS[code], { error: code, path: "/x", message: `the ${code} message` }];
      }
    });
    expect(seen).toEqual(want);
  });

  test("a thrown value that is not an AirlockError is internal 500 with its message", async () => {
    const res = await quiet(async () => appThrowing(() => new Error("boom")).request("/throw"));
    expect([res.status, await res.json()]).toEqual([500, { error: "internal", message: "boom" }]);
  });

  test("a SQLite failure of a full data dir is data_dir_unusable 503 naming the database, when the renderer knows it", async () => {
    const full = () => Object.assign(new Error("database or disk is full"), { code: "SQLITE_FULL" });
    const named = await appThrowing(full, "/data/airlock.db").request("/throw");
    expect(named.status).toBe(503);
    expect(await named.json()).toMatchObject({ error: "data_dir_unusable", path: "/data/airlock.db" });
    const unnamed = await quiet(async () => appThrowing(full).request("/throw"));
    expect([unnamed.status, ((await unnamed.json()) as { error: string }).error]).toEqual([500, "internal"]);
  });

  test("an unknown route is not_found 404 naming the method and path", async () => {
    const res = await appThrowing(() => null).request("/nope", { method: "POST" });
    expect([res.status, await res.json()]).toEqual([404, { error: "not_found", message: "no route POST /nope; see docs/api.md" }]);
  });
});

describe("token refusals on a shared (PostgreSQL) store", () => {
  test("a wrong bearer token and a wrong approver token say every node needs the same token files; not on SQLite, not for a missing header", async () => {
    const wrong = () => new AirlockError("unauthorized", "the bearer token is wrong; use the api-token from the data dir");
    const proof = () => new AirlockError("user_proof_invalid", "the approver token is not this server's");
    const missing = () => new AirlockError("unauthorized", "missing Authorization header");
    const msg = async (app: Hono) => ((await (await app.request("/throw")).json()) as { message: string }).message;
    expect(await msg(appThrowing(wrong, undefined, true))).toContain("same api-token and approver-token files");
    expect(await msg(appThrowing(proof, undefined, true))).toContain("same api-token and approver-token files");
    expect(await msg(appThrowing(missing, undefined, true))).not.toContain("approver-token");
    expect(await msg(appThrowing(wrong))).not.toContain("approver-token");
    expect(await msg(appThrowing(proof))).not.toContain("same api-token");
  });
});
