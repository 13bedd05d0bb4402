/**
 * @module test/e2e/postgres-storage
 * `airlock serve` (from source) with `storage: postgres://…` against a throwaway PostgreSQL cluster: a
 * scripted-provider turn with a gated tool call runs through the real HTTP API and SSE; sessions and
 * messages are listed; the server is stopped and started again on a fresh data dir with the same URL and
 * everything is still there (it lives in PostgreSQL, not in the data dir). A server that cannot be
 * reached exits 2 with `storage_unavailable`, a clear message, and the password nowhere in its output.
 * Skipped, with the reason, only when PostgreSQL is not installed.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stringify } from "yaml";
import { openSse } from "../harness.ts";
import { spawnServe, type ServeProcess } from "../harness-serve.ts";
import { type PgCluster, pgAvailable, startPgCluster } from "../pg-cluster.ts";

const MAIN = join(import.meta.dir, "..", "..", "src", "main.ts");
const SECRET = "Pg-s3cret-9xq";
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

describe.skipIf(why !== null)(`airlock serve on PostgreSQL${why ? ` — skipped: ${why}` : ""}`, () => {
  let cluster: PgCluster;
  let url: string;
  const dir = mkdtempSync(join(tmpdir(), "airlock-pg-e2e-"));
  const ws = join(dir, "ws");
  const procs: Bun.Subprocess[] = [];
  mkdirSync(ws);
  writeFileSync(join(ws, "hello.txt"), "hi\n");

  beforeAll(async () => {
    cluster = await startPgCluster();
    url = await cluster.createDatabase("airlock_e2e");
  }, 120_000);
  afterAll(async () => {
    for (const p of procs) {
      p.kill("SIGKILL");
      await p.exited;
    }
    cluster?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  /** A data dir whose airlock.yaml names the database and a scripted model (list the workspace, then answer). */
  function dataDir(name: string, storage: string): string {
    const d = join(dir, name);
    mkdirSync(d, { recursive: true });
    writeFileSync(
      join(d, "turns.yaml"),
      stringify({ turns: [{ tool_calls: [{ name: "developer__list_dir", arguments: { path: "." } }] }, { text: "listed: hello.txt" }] }),
    );
    writeFileSync(join(d, "airlock.yaml"), stringify({ provider: { name: "scripted", script: "turns.yaml" }, storage }));
    return d;
  }

  async function serve(d: string): Promise<ServeProcess & { token: string }> {
    const sp = await spawnServe([process.execPath, MAIN, "serve", "--port", "0", "--data-dir", d], { cwd: ws });
    procs.push(sp.proc);
    return { ...sp, token: readFileSync(join(d, "api-token"), "utf8").trim() };
  }

  const api = (s: { url: string; token: string }, path: string, init: RequestInit = {}) =>
    fetch(s.url + path, { ...init, headers: { authorization: `Bearer ${s.token}`, "content-type": "application/json", ...(init.headers ?? {}) } });

  test("a scripted run through the HTTP API is stored in PostgreSQL and survives a restart on another data dir", async () => {
    const first = await serve(dataDir("data1", url));
    const created = await api(first, "/sessions", { method: "POST", body: JSON.stringify({ workspace: ws, title: "on postgres" }) });
    expect(created.status).toBe(201);
    const session = (await created.json()) as { id: string };
    const sse = await openSse(`${first.url}/sessions/${session.id}/reply`, {
      method: "POST",
      headers: { authorization: `Bearer ${first.token}`, "content-type": "application/json" },
      body: JSON.stringify({ message: "what is here?" }),
    });
    expect(sse.status).toBe(200);
    const done = await sse.waitFor((e) => e.event === "turn_finished", 60_000);
    expect(done.data).toMatchObject({ status: "completed" });
    sse.close();
    const listed = (await (await api(first, "/sessions")).json()) as { sessions: { id: string; title: string }[] };
    expect(listed.sessions.map((s) => [s.id, s.title])).toContainEqual([session.id, "on postgres"]);
    const full = (await (await api(first, `/sessions/${session.id}`)).json()) as { messages: { role: string; content: string }[] };
    const roles = full.messages.map((m) => m.role);
    expect(roles).toEqual(["user", "assistant", "tool", "assistant"]);
    expect(full.messages.at(-1)!.content).toBe("listed: hello.txt");
    const audit = (await (await api(first, `/audit?session=${session.id}`)).json()) as { audit: { kind: string }[] };
    expect(audit.audit.length).toBeGreaterThan(0);
    first.proc.kill("SIGTERM");
    expect(await first.proc.exited).toBe(0);

    // the rows are in PostgreSQL
    const pg = new Bun.SQL(url, { max: 1 });
    try {
      const [row] = await pg`SELECT COUNT(*)::int AS n FROM messages WHERE session_id = ${session.id}`;
      expect(row.n).toBe(4);
    } finally {
      await pg.close();
    }

    // another data dir (nothing of the first's SQLite), same database: all still there
    const second = await serve(dataDir("data2", url));
    const again = (await (await api(second, `/sessions/${session.id}`)).json()) as { title: string; messages: { role: string }[] };
    expect(again.title).toBe("on postgres");
    expect(again.messages.map((m) => m.role)).toEqual(roles);
    second.proc.kill("SIGTERM");
    expect(await second.proc.exited).toBe(0);
  }, 180_000);

  test("an unreachable database: exit 2, storage_unavailable naming the redacted URL, the password nowhere", async () => {
    const bad = `postgres://airlock:${SECRET}@127.0.0.1:${await closedPort()}/airlock`;
    const d = dataDir("data-bad", bad);
    const p = Bun.spawn([process.execPath, MAIN, "serve", "--port", "0", "--data-dir", d], { cwd: ws, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
    procs.push(p);
    const [code, out, err] = await Promise.all([p.exited, new Response(p.stdout).text(), new Response(p.stderr).text()]);
    expect(code).toBe(2);
    expect(err).toContain("storage_unavailable");
    expect(err).toContain("postgres://airlock:***@127.0.0.1:");
    expect(out + err).not.toContain(SECRET);
    // the same through $AIRLOCK_DATABASE_URL (it wins over a good storage: key), and through airlock doctor
    const good = dataDir("data-env", url);
    const viaEnv = Bun.spawn([process.execPath, MAIN, "serve", "--port", "0", "--data-dir", good], {
      cwd: ws,
      env: { ...process.env, AIRLOCK_DATABASE_URL: bad },
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
    });
    procs.push(viaEnv);
    const [code2, err2] = await Promise.all([viaEnv.exited, new Response(viaEnv.stderr).text()]);
    expect(code2).toBe(2);
    expect(err2).toContain("storage_unavailable");
    expect(err2).not.toContain(SECRET);
    const doctor = Bun.spawn([process.execPath, MAIN, "doctor", "--json", "--data-dir", d], { cwd: ws, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
    procs.push(doctor);
    const [, dout, derr] = await Promise.all([doctor.exited, new Response(doctor.stdout).text(), new Response(doctor.stderr).text()]);
    expect(dout + derr).not.toContain(SECRET);
    const report = JSON.parse(dout) as { checks: { name: string; status: string; message: string }[] };
    expect(report.checks.find((c) => c.name === "storage")).toMatchObject({ status: "fail" });
  }, 180_000);
});
