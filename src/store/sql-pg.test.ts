/**
 * @module store/sql-pg.test
 * The PostgreSQL executor's pieces that need no server: `?` → `$n` numbering outside quotes and comments,
 * password redaction, the backend choice (`$AIRLOCK_DATABASE_URL` over `storage:`), and a server that is
 * not there: `storage_unavailable` (503, exit 2) with the password in no message, and the doctor's
 * `storage` check saying so. Behaviour against a real server: test/contract/.
 */
import { describe, expect, test } from "bun:test";
import { createServer } from "node:net";
import { storageCheck } from "../cli/doctor.ts";
import { AirlockError, exitCodeFor, httpStatus } from "../errors.ts";
import { connectionProblem, numberPlaceholders, openPgSql, pgSql, redactUrl } from "./sql-pg.ts";
import { chooseStorage } from "./storage.ts";

const SECRET = "s3cr%40t-Pa55";

/** A loopback port with nothing listening (bound, then closed). */
async function closedPort(): Promise<number> {
  return await new Promise((resolve) => {
    const s = createServer();
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

describe("numberPlaceholders", () => {
  test("numbers ? in order", () => {
    expect(numberPlaceholders("SELECT a FROM t WHERE a = ? AND b IN (?, ?)")).toEqual({ text: "SELECT a FROM t WHERE a = $1 AND b IN ($2, $3)", count: 3 });
    expect(numberPlaceholders("SELECT 1")).toEqual({ text: "SELECT 1", count: 0 });
  });

  test("leaves a ? inside strings, identifiers, comments and dollar quotes alone", () => {
    const cases: [string, string, number][] = [
      ["SELECT '?', ?", "SELECT '?', $1", 1],
      ["SELECT 'it''s ?', ?", "SELECT 'it''s ?', $1", 1],
      ["SELECT E'a\\' ?', ?", "SELECT E'a\\' ?', $1", 1],
      ['SELECT "col?" FROM t WHERE x = ?', 'SELECT "col?" FROM t WHERE x = $1', 1],
      ["SELECT ? -- what?\n, ?", "SELECT $1 -- what?\n, $2", 2],
      ["SELECT /* a ? /* nested ? */ still ? */ ?", "SELECT /* a ? /* nested ? */ still ? */ $1", 1],
      ["SELECT $$ ? $$, $tag$ ? $x$ ? $tag$, ?", "SELECT $$ ? $$, $tag$ ? $x$ ? $tag$, $1", 1],
      ["SELECT ? -- trailing ?", "SELECT $1 -- trailing ?", 1],
    ];
    for (const [sql, text, count] of cases) expect(numberPlaceholders(sql)).toEqual({ text, count });
  });

  test("a placeholder count that differs from the values is refused before reaching the server", async () => {
    const sql = pgSql(`postgres://u@127.0.0.1:${await closedPort()}/db`);
    await expect(sql.get("SELECT ?, ?", [1])).rejects.toThrow(/2 placeholder\(s\) but 1 value/);
    await sql.close();
  });
});

describe("redactUrl", () => {
  test("hides the password of the userinfo and of a password= parameter, keeps the rest", () => {
    expect(redactUrl(`postgres://app:${SECRET}@db.example:5432/airlock?sslmode=require`)).toBe("postgres://app:***@db.example:5432/airlock?sslmode=require");
    expect(redactUrl("postgresql://app@db/airlock?password=hunter2")).toBe("postgresql://app@db/airlock?password=***");
    expect(redactUrl("postgres://db/airlock")).toBe("postgres://db/airlock");
    expect(redactUrl("postgres://app:pw@[bad")).not.toContain("pw@");
  });

  test("what does not parse as a URL loses all it may hold of a password (found by an attack: a '/' in the password, a keyword DSN)", () => {
    for (const [raw, secret] of [
      ["postgres://airlock:hunter2/xyz@127.0.0.1:1/db", "hunter2"],
      ["postgres://airlock:a@b/c@127.0.0.1/db", "a@b"],
      ["host=127.0.0.1 user=airlock password = hunter2", "hunter2"],
      ["host=x password='a b c' user=y", "a b c"],
      ["host=x PASSWORD=\"q r\" user=y", "q r"],
    ] as const) {
      const shown = redactUrl(raw);
      expect(shown).not.toContain(secret);
      expect(shown).toContain("***");
    }
    expect(redactUrl("postgres://u:p@h/db?sslpassword=zz&x=1")).toBe("postgres://u:***@h/db?sslpassword=***&x=1");
  });
});

describe("chooseStorage", () => {
  test("absent everywhere: SQLite; storage: alone: PostgreSQL; $AIRLOCK_DATABASE_URL wins; empty env ignored", () => {
    expect(chooseStorage(undefined, {})).toEqual({ kind: "sqlite" });
    expect(chooseStorage("postgres://a@h/d", {})).toEqual({ kind: "postgres", url: "postgres://a@h/d", source: "config" });
    expect(chooseStorage("postgres://a@h/d", { AIRLOCK_DATABASE_URL: "postgresql://b@h/e" })).toEqual({ kind: "postgres", url: "postgresql://b@h/e", source: "env" });
    expect(chooseStorage(undefined, { AIRLOCK_DATABASE_URL: " " })).toEqual({ kind: "sqlite" });
  });

  test("a non-PostgreSQL $AIRLOCK_DATABASE_URL is config_invalid, its password redacted", () => {
    const err = (() => {
      try {
        chooseStorage(undefined, { AIRLOCK_DATABASE_URL: `mysql://u:${SECRET}@h/d` });
      } catch (e) {
        return e;
      }
    })() as AirlockError;
    expect(err.code).toBe("config_invalid");
    expect(err.message).not.toContain(SECRET);
  });
});

describe("an unreachable server", () => {
  test("is storage_unavailable (503, exit 2) naming the redacted URL, never the password", async () => {
    const url = `postgres://app:${SECRET}@127.0.0.1:${await closedPort()}/airlock`;
    const err = await openPgSql(url, { connectionTimeoutS: 5 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AirlockError);
    const e = err as AirlockError;
    expect(e.code).toBe("storage_unavailable");
    expect([httpStatus(e.code), exitCodeFor(e.code)]).toEqual([503, 2]);
    expect(e.message).toContain("postgres://app:***@127.0.0.1:");
    expect(JSON.stringify({ m: e.message, s: e.stack, d: (e as { details?: unknown }).details })).not.toContain(SECRET);
    expect(JSON.stringify(e)).not.toContain(SECRET);
    expect(e.message).not.toContain(decodeURIComponent(SECRET));
  });

  test("the doctor's storage check fails with the redacted URL and a fix; SQLite is ok", async () => {
    const url = `postgresql://app:${SECRET}@127.0.0.1:${await closedPort()}/airlock`;
    const c = await storageCheck(undefined, { AIRLOCK_DATABASE_URL: url });
    expect(c).toMatchObject({ name: "storage", status: "fail" });
    expect(c.message).toContain("$AIRLOCK_DATABASE_URL");
    expect(c.fix).toBeTruthy();
    expect(JSON.stringify(c)).not.toContain(SECRET);
    expect(JSON.stringify(c)).not.toContain(decodeURIComponent(SECRET));
    expect(await storageCheck(undefined, {})).toMatchObject({ name: "storage", status: "ok" });
  });
});

describe("connectionProblem", () => {
  test("says which from the driver's code or the SQLSTATE, with a fix that matches (a refused login is not told to start the server)", () => {
    const of = (code?: string, errno?: string) => connectionProblem(Object.assign(new Error("x"), { code, errno }));
    expect(of("ERR_POSTGRES_CONNECTION_REFUSED").reason).toBe("refused");
    expect(of("ERR_POSTGRES_CONNECTION_REFUSED").fix).toContain("start the server");
    expect(of("ERR_POSTGRES_CONNECTION_TIMEOUT").reason).toBe("timeout");
    expect(of("ERR_POSTGRES_CONNECTION_FAILED").reason).toBe("timeout");
    for (const [code, errno] of [["ERR_POSTGRES_AUTHENTICATION_FAILED_PBKDF2", undefined], ["ERR_POSTGRES_SERVER_ERROR", "28P01"], ["ERR_POSTGRES_SERVER_ERROR", "28000"]] as const) {
      const p = of(code, errno);
      expect(p.reason).toBe("login");
      expect(p.fix).toContain("user and password");
      expect(p.fix).not.toContain("start the server");
    }
    expect(of("ERR_POSTGRES_SERVER_ERROR", "3D000").reason).toBe("no_database");
    expect(of("ERR_POSTGRES_TLS_NOT_AVAILABLE").reason).toBe("tls");
    expect(of("ERR_POSTGRES_SERVER_ERROR", "53300").reason).toBe("server_busy");
  });

  test("a URL the driver refuses (port 99999, port 0) is config_invalid naming the setting, password redacted", () => {
    for (const url of ["postgres://u:pw-9z@127.0.0.1:99999/d", "postgres://u:pw-9z@127.0.0.1:0/d", "postgres://u:pw-9z@127.0.0.1:abc/d"]) {
      let err: unknown;
      try {
        chooseStorage(url, {});
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(AirlockError);
      expect((err as AirlockError).code).toBe("config_invalid");
      expect((err as AirlockError).message).toContain("storage:");
      expect((err as AirlockError).message).not.toContain("pw-9z");
    }
  });
});
