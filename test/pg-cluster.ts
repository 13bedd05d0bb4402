/**
 * @module test/pg-cluster
 * A throwaway PostgreSQL cluster for tests: `initdb` on a temp folder, `pg_ctl start` on a free loopback
 * port with trust authentication, removed after the last test of the `bun test` process.
 *
 * PostgreSQL refuses to run as root, so as root the cluster runs as the `postgres` user (Debian's
 * package creates it) or else `nobody`; otherwise as the current user. The binaries are looked up on
 * PATH, then in Debian's `/usr/lib/postgresql/<major>/bin`. When none is installed, `pgAvailable()`
 * says why and tests skip with that message (`.ci/run` installs Debian's `postgresql`).
 */
import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { IS_ROOT, NOBODY } from "./as-user.ts";

/** A running test cluster. */
export interface PgCluster {
  /** `postgres://postgres@127.0.0.1:PORT/postgres` (trust auth, no password). */
  url: string;
  port: number;
  /** The superuser's name (`postgres`). */
  user: string;
  /** Creates a fresh empty database and returns its URL (one per test keeps tests apart). */
  createDatabase(name?: string): Promise<string>;
  /** Stops the cluster (immediate mode) and removes its folder. Idempotent. */
  stop(): void;
}

/** The folder holding `initdb` and `pg_ctl`, or null when PostgreSQL is not installed. */
export function pgBinDir(): string | null {
  const onPath = spawnSync("sh", ["-c", "command -v initdb"], { encoding: "utf8" }).stdout.trim();
  if (onPath && existsSync(join(onPath, "..", "pg_ctl"))) return join(onPath, "..");
  const base = "/usr/lib/postgresql";
  if (!existsSync(base)) return null;
  const majors = readdirSync(base)
    .filter((d) => /^\d+$/.test(d))
    .sort((a, b) => Number(b) - Number(a));
  for (const m of majors) if (existsSync(join(base, m, "bin", "initdb"))) return join(base, m, "bin");
  return null;
}

/** Null when a test cluster can be started here, else the reason (for `test.skipIf` messages). */
export function pgAvailable(): string | null {
  return pgBinDir() ? null : "PostgreSQL is not installed (initdb not found on PATH or in /usr/lib/postgresql/*/bin); .ci/run installs Debian's postgresql";
}

/** argv prefix running a command as the cluster's OS user (empty when not root). */
function asClusterUser(): string[] {
  if (!IS_ROOT) return [];
  const id = spawnSync("id", ["-u", "postgres"], { encoding: "utf8" });
  const uid = id.status === 0 ? Number(id.stdout.trim()) : NOBODY;
  const gid = id.status === 0 ? Number(spawnSync("id", ["-g", "postgres"], { encoding: "utf8" }).stdout.trim()) : NOBODY;
  return ["setpriv", `--reuid=${uid}`, `--regid=${gid}`, "--clear-groups", "--"];
}

async function freePort(): Promise<number> {
  return await new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/**
 * Fills `data` with a fresh cluster's files: a copy (`cp -a`, owner and modes kept, ~0.15 s) of a template
 * `initdb` made once per machine, PostgreSQL version and cluster user (1–3 s each time otherwise; 26 test
 * files start a cluster). The template lives in `tmpdir()/airlock-pg-template-<key>` (~40 MB, left for later
 * runs); parallel test processes that find none each build one in a folder of their own and rename it into
 * place, the first rename wins and the others use it.
 * @throws Error when initdb or cp fail, or the template folder belongs to another user.
 */
function copyTemplate(bin: string, prefix: string[], data: string, sh: (argv: string[]) => void): void {
  const version = spawnSync(join(bin, "initdb"), ["--version"], { encoding: "utf8" }).stdout.trim();
  const key = new Bun.CryptoHasher("sha256").update(`${bin}\n${version}\n${prefix.join(" ")}\n${process.getuid?.()}`).digest("hex").slice(0, 16);
  const template = join(tmpdir(), `airlock-pg-template-${key}`);
  // a template made by another user (the name is predictable) is not used: it is removed when ours may, else refused
  const owner = prefix.length ? Number(prefix.find((a) => a.startsWith("--reuid="))!.slice("--reuid=".length)) : process.getuid!();
  if (existsSync(template) && statSync(template).uid !== owner) throw new Error(`${template} is not owned by uid ${owner}; remove it`);
  if (!existsSync(join(template, "PG_VERSION"))) {
    const building = mkdtempSync(join(tmpdir(), "airlock-pg-building-"));
    chmodSync(building, 0o777);
    try {
      sh([join(bin, "initdb"), "-D", join(building, "data"), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"]);
      try {
        renameSync(join(building, "data"), template);
      } catch (e) {
        // another test process put its template in place first: use that one
        if (!existsSync(join(template, "PG_VERSION"))) throw e;
      }
    } finally {
      rmSync(building, { recursive: true, force: true });
    }
  }
  const cp = spawnSync("cp", ["-a", template, data], { encoding: "utf8" });
  if (cp.status !== 0) throw new Error(`cp -a ${template} ${data} failed (${cp.status}): ${cp.stderr}`);
}

const running = new Set<PgCluster>();
process.on("exit", () => {
  for (const c of running) c.stop();
});

/**
 * Starts a cluster: a copy of the template cluster (initdb once per machine, see `copyTemplate`), then
 * `pg_ctl start`. Call once per test file (`beforeAll`) and `stop()` it in
 * `afterAll`; a cluster left running is stopped when the process exits.
 * @throws Error when PostgreSQL is not installed (check `pgAvailable()` first) or initdb/pg_ctl fail
 *   (the message carries their output).
 */
export async function startPgCluster(): Promise<PgCluster> {
  const bin = pgBinDir();
  if (!bin) throw new Error(pgAvailable()!);
  const dir = mkdtempSync(join(tmpdir(), "airlock-pg-"));
  chmodSync(dir, 0o777);
  const data = join(dir, "data");
  const prefix = asClusterUser();
  const sh = (argv: string[]) => {
    const r = spawnSync(prefix[0] ?? argv[0]!, [...prefix.slice(1), ...(prefix.length ? argv : argv.slice(1))], {
      encoding: "utf8",
      cwd: dir,
      timeout: 120_000,
    });
    if (r.status !== 0) throw new Error(`${argv.join(" ")} failed (${r.status}): ${r.stdout}\n${r.stderr}`);
  };
  copyTemplate(bin, prefix, data, sh);
  // The free port is closed again before the postmaster binds it, so another process (a parallel test
  // file) may take it meanwhile: then the start fails with "Address already in use" and is retried on
  // another port.
  let port = 0;
  for (let attempt = 1; ; attempt++) {
    port = await freePort();
    const opts = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off -c max_connections=200`;
    try {
      sh([join(bin, "pg_ctl"), "-D", data, "-l", join(dir, "log"), "-o", opts, "-w", "-t", "120", "start"]);
      break;
    } catch (e) {
      const log = existsSync(join(dir, "log")) ? readFileSync(join(dir, "log"), "utf8") : "";
      if (attempt >= 5 || !/already in use|could not bind|could not create any TCP\/IP sockets/i.test(log)) throw e;
      rmSync(join(dir, "log"), { force: true });
    }
  }
  let stopped = false;
  let n = 0;
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  const cluster: PgCluster = {
    url,
    port,
    user: "postgres",
    async createDatabase(name = `t${process.pid}_${++n}_${Date.now().toString(36)}`) {
      const sql = new Bun.SQL(url, { max: 1 });
      try {
        await sql.unsafe(`CREATE DATABASE "${name.replace(/"/g, "")}"`);
      } finally {
        await sql.close();
      }
      return `postgres://postgres@127.0.0.1:${port}/${name}`;
    },
    stop() {
      if (stopped) return;
      stopped = true;
      running.delete(cluster);
      try {
        sh([join(bin, "pg_ctl"), "-D", data, "-m", "immediate", "-w", "stop"]);
      } catch {
        // already down
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
  running.add(cluster);
  return cluster;
}
