/**
 * @module test/e2e/postgres-setup
 * A new user's first steps on PostgreSQL fail closed and say what to fix (docs/scale-out.md "Setting up"):
 * a user without CREATE on schema public (PostgreSQL 15's default) gets `storage_unavailable` (exit 2)
 * naming `GRANT CREATE ON SCHEMA`, and `airlock doctor` says migrations cannot run; once granted, a user
 * without CREATE on the database gets `storage_unavailable` naming `GRANT CREATE ON DATABASE` (the
 * schedule queue's schema) instead of serving with schedules dead; with both grants `serve` starts. A URL
 * the driver cannot parse (port 99999) is `config_invalid` naming the setting, password redacted; a closed
 * port, an unknown host and a refused login each say which, with doctor's fix matching.
 * Skipped, with the reason, only when PostgreSQL is not installed.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stringify } from "yaml";
import { spawnServe } from "../harness-serve.ts";
import { type PgCluster, pgAvailable, startPgCluster } from "../pg-cluster.ts";

const MAIN = join(import.meta.dir, "..", "..", "src", "main.ts");
const SECRET = "Pg-s3cret-7kw";
const why = pgAvailable();

async function closedPort(): Promise<number> {
  return await new Promise((resolve) => {
    const s = createServer();
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

describe.skipIf(why !== null)(`PostgreSQL setup errors${why ? ` — skipped: ${why}` : ""}`, () => {
  let cluster: PgCluster;
  const dir = mkdtempSync(join(tmpdir(), "airlock-pg-setup-"));
  const ws = join(dir, "ws");
  const procs: Bun.Subprocess[] = [];
  mkdirSync(ws);

  beforeAll(async () => {
    cluster = await startPgCluster();
  }, 120_000);
  afterAll(async () => {
    for (const p of procs) {
      p.kill("SIGKILL");
      await p.exited;
    }
    cluster?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  let n = 0;
  function dataDir(storage: string): string {
    const d = join(dir, `data${++n}`);
    mkdirSync(d, { recursive: true });
    writeFileSync(join(d, "turns.yaml"), stringify({ turns: [{ text: "hi" }] }));
    writeFileSync(join(d, "airlock.yaml"), stringify({ provider: { name: "scripted", script: "turns.yaml" }, storage }));
    return d;
  }

  async function run(args: string[], env: Record<string, string> = {}): Promise<{ code: number; out: string; err: string }> {
    const p = Bun.spawn([process.execPath, MAIN, ...args], { cwd: ws, env: { ...process.env, AIRLOCK_DATABASE_URL: "", ...env }, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
    procs.push(p);
    const [code, out, err] = await Promise.all([p.exited, new Response(p.stdout).text(), new Response(p.stderr).text()]);
    return { code, out, err };
  }

  async function doctorStorage(d: string, env: Record<string, string> = {}): Promise<{ status: string; message: string; fix?: string }> {
    const r = await run(["doctor", "--json", "--data-dir", d], env);
    expect(r.out + r.err).not.toContain(SECRET);
    const report = JSON.parse(r.out) as { checks: { name: string; status: string; message: string; fix?: string }[] };
    return report.checks.find((c) => c.name === "storage")!;
  }

  async function admin(dbUrl: string, stmt: string): Promise<void> {
    const sql = new Bun.SQL(dbUrl, { max: 1 });
    try {
      await sql.unsafe(stmt);
    } finally {
      await sql.close();
    }
  }

  test("no CREATE on schema public, then none on the database: storage_unavailable naming each GRANT; doctor says so; granted, serve starts", async () => {
    const db = await cluster.createDatabase("grants");
    await admin(db, `CREATE ROLE limited LOGIN PASSWORD '${SECRET}'`);
    const limited = `postgres://limited:${SECRET}@127.0.0.1:${cluster.port}/grants`;
    const d = dataDir(limited);

    const first = await run(["serve", "--port", "0", "--data-dir", d]);
    expect(first.code).toBe(2);
    expect(first.err).toContain("storage_unavailable");
    expect(first.err).toContain('GRANT CREATE ON SCHEMA "public" TO "limited"');
    expect(first.err).not.toContain("internal");
    expect(first.err).not.toContain(SECRET);
    const before = await doctorStorage(d);
    expect(before.status).toBe("fail");
    expect(before.message).toContain("migrations cannot run");
    expect(before.message).toContain("GRANT CREATE ON SCHEMA");

    await admin(db, "GRANT CREATE ON SCHEMA public TO limited");
    const second = await run(["serve", "--port", "0", "--data-dir", d]);
    expect(second.code).toBe(2);
    expect(second.err).toContain("storage_unavailable");
    expect(second.err).toContain('GRANT CREATE ON DATABASE "grants" TO "limited"');
    expect(second.err).not.toContain(SECRET);
    const mid = await doctorStorage(d);
    expect(mid.status).toBe("fail");
    expect(mid.message).toContain("GRANT CREATE ON DATABASE");

    await admin(db, "GRANT CREATE ON DATABASE grants TO limited");
    expect((await doctorStorage(d)).status).toBe("ok");
    const sp = await spawnServe([process.execPath, MAIN, "serve", "--port", "0", "--data-dir", d], { cwd: ws, env: { ...process.env, AIRLOCK_DATABASE_URL: "" } });
    procs.push(sp.proc);
    // the start-up lines say the store (password redacted) and the role
    for (let i = 0; i < 600 && !sp.stderr().includes("; role: "); i++) await Bun.sleep(50);
    expect(sp.stderr()).toContain(`airlock: store: PostgreSQL postgres://limited:***@127.0.0.1:${cluster.port}/grants (from storage:); role: all`);
    expect(sp.stderr()).not.toContain(SECRET);
    // a wrong bearer token on a shared store says every node needs the same token files
    const res = await fetch(`${sp.url}/sessions`, { headers: { authorization: "Bearer not-the-token" } });
    expect(res.status).toBe(401);
    expect(((await res.json()) as { message: string }).message).toContain("same api-token and approver-token files");
    sp.proc.kill("SIGTERM");
    expect(await sp.proc.exited).toBe(0);
  }, 180_000);

  test("a URL the driver cannot parse (port 99999): config_invalid naming the setting, password redacted; serve and doctor", async () => {
    const bad = `postgres://airlock:${SECRET}@127.0.0.1:99999/airlock`;
    const viaConfig = await run(["serve", "--port", "0", "--data-dir", dataDir(bad)]);
    expect(viaConfig.code).toBe(2);
    expect(viaConfig.err).toContain("config_invalid");
    expect(viaConfig.err).toContain("storage:");
    expect(viaConfig.err).toContain("postgres://***@127.0.0.1:99999");
    expect(viaConfig.err).not.toContain(SECRET);
    expect(viaConfig.err).not.toContain("internal");

    const d = dataDir(`postgres://postgres@127.0.0.1:${cluster.port}/postgres`);
    const viaEnv = await run(["serve", "--port", "0", "--data-dir", d], { AIRLOCK_DATABASE_URL: bad });
    expect(viaEnv.code).toBe(2);
    expect(viaEnv.err).toContain("config_invalid");
    expect(viaEnv.err).toContain("$AIRLOCK_DATABASE_URL");
    expect(viaEnv.err).not.toContain(SECRET);
    const check = await doctorStorage(d, { AIRLOCK_DATABASE_URL: bad });
    expect(check.status).toBe("fail");
    expect(check.message).toContain("$AIRLOCK_DATABASE_URL");
  }, 120_000);

  test("closed port, unknown host, refused login: each says which, with doctor's fix matching", async () => {
    const closed = dataDir(`postgres://airlock:${SECRET}@127.0.0.1:${await closedPort()}/airlock`);
    const r1 = await run(["serve", "--port", "0", "--data-dir", closed]);
    expect(r1.code).toBe(2);
    expect(r1.err).toContain("storage_unavailable");
    expect(r1.err).toContain("refused");
    expect((await doctorStorage(closed)).fix).toContain("start the server");

    const unknown = dataDir(`postgres://airlock:${SECRET}@no-such-host.invalid:5432/airlock`);
    const r2 = await run(["serve", "--port", "0", "--data-dir", unknown]);
    expect(r2.code).toBe(2);
    expect(r2.err).toContain("storage_unavailable");
    expect(r2.err).toContain("no-such-host.invalid is unknown");
    const c2 = await doctorStorage(unknown);
    expect(c2.fix).toContain("correct the host");
    expect(c2.fix).not.toContain("start the server");

    // trust authentication accepts any password; a user that does not exist is the login refusal here
    const login = dataDir(`postgres://nobody_here:${SECRET}@127.0.0.1:${cluster.port}/postgres`);
    const r3 = await run(["serve", "--port", "0", "--data-dir", login]);
    expect(r3.code).toBe(2);
    expect(r3.err).toContain("storage_unavailable");
    expect(r3.err).toContain("refused the login");
    expect(r3.err).not.toContain(SECRET);
    const c3 = await doctorStorage(login);
    expect(c3.status).toBe("fail");
    expect(c3.fix).toContain("user and password");
    expect(c3.fix).not.toContain("start the server");

    const nodb = dataDir(`postgres://postgres@127.0.0.1:${cluster.port}/no_such_db`);
    expect((await run(["serve", "--port", "0", "--data-dir", nodb])).err).toContain("no such database");
    expect((await doctorStorage(nodb)).fix).toContain("createdb");
  }, 120_000);
});
