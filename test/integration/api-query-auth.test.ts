/**
 * @module test/integration/api-query-auth
 * Findings of a new user, over real HTTP: `GET /sessions?limit=` outside 1–1000 (or not a number) is a
 * 400 naming `limit`, not silently clamped; an `Authorization` header without the `Bearer ` prefix is told so.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startHarness, type Harness } from "../harness.ts";

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
  for (let i = 0; i < 3; i++) await h.createSession({ title: `s${i}` });
});
afterAll(async () => {
  await h.close();
});

describe("GET /sessions?limit=", () => {
  for (const bad of ["5000", "1001", "abc", "0", "-1", "2.5", "", "1e3"]) {
    test(`limit=${JSON.stringify(bad)} → 400 bad_request naming limit`, async () => {
      const res = await h.api(`/sessions?limit=${encodeURIComponent(bad)}`);
      expect(res.status).toBe(400);
      const body = (await res.json()) as { error: string; message: string; fields: string[] };
      expect(body.error).toBe("bad_request");
      expect(body.message).toBe(`query: limit: expected an integer from 1 to 1000, got ${JSON.stringify(bad)}; leave it out for the newest 200`);
      expect(body.fields).toEqual(["limit"]);
    });
  }

  test("a limit from 1 to 1000 is honoured, and no limit lists them all (default 200)", async () => {
    const two = (await (await h.api("/sessions?limit=2")).json()) as { sessions: unknown[] };
    expect(two.sessions).toHaveLength(2);
    const max = await h.api("/sessions?limit=1000");
    expect(max.status).toBe(200);
    expect(((await max.json()) as { sessions: unknown[] }).sessions).toHaveLength(3);
    const all = (await (await h.api("/sessions")).json()) as { sessions: unknown[] };
    expect(all.sessions).toHaveLength(3);
  });
});

describe("Authorization", () => {
  async function refused(authorization: string | undefined): Promise<string> {
    const res = await fetch(`${h.url}/sessions`, { headers: authorization === undefined ? {} : { authorization } });
    expect(res.status).toBe(401);
    const body = (await res.json()) as { error: string; message: string };
    expect(body.error).toBe("unauthorized");
    return body.message;
  }

  test("the right token without 'Bearer ' is told the prefix is missing", async () => {
    expect(await refused(h.token)).toBe("the Authorization header is missing the 'Bearer ' prefix: send Authorization: Bearer <api-token> ('airlock token' prints where it is)");
    expect(await refused(`Basic ${h.token}`)).toContain("missing the 'Bearer ' prefix");
  });

  test("'Bearer' with no token, a wrong token, and no header each say what was wrong", async () => {
    expect(await refused("Bearer ")).toContain("no token after 'Bearer '");
    expect(await refused("Bearer not-the-token")).toContain("the bearer token is wrong");
    expect(await refused(undefined)).toContain("missing Authorization header");
  });

  test("'Bearer <token>' (any case of the scheme) is accepted", async () => {
    for (const scheme of ["Bearer", "bearer"]) {
      const res = await fetch(`${h.url}/sessions?limit=1`, { headers: { authorization: `${scheme} ${h.token}` } });
      expect(res.status).toBe(200);
    }
  });
});
