/**
 * `airlock serve --role` (SPEC §5.8) as a user meets it: `bun src/main.ts serve …` as a real subprocess.
 * On the SQLite store only `all` runs; `api` and `worker` exit 2 saying why; an unknown role is a usage error.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const MAIN = join(import.meta.dir, "..", "..", "src", "main.ts");
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function spawnServe(args: string[]) {
  const home = mkdtempSync(join(tmpdir(), "airlock-role-"));
  dirs.push(home);
  return Bun.spawn([process.execPath, MAIN, "serve", "--port", "0", ...args], {
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: home, AIRLOCK_HOME: join(home, "data") },
  });
}

describe("airlock serve --role", () => {
  for (const role of ["api", "worker"]) {
    test(`--role ${role} on the SQLite store exits 2 naming the PostgreSQL store and --role all`, async () => {
      const p = spawnServe(["--role", role]);
      const [stderr, code] = await Promise.all([new Response(p.stderr).text(), p.exited]);
      expect(code).toBe(2);
      expect(stderr).toContain(`--role ${role} needs a store several processes share (storage: postgres://`);
      expect(stderr).toContain("--role all");
      expect(stderr).not.toContain("listening on");
    }, 60_000);
  }

  test("an unknown role is a usage error naming the choices", async () => {
    const p = spawnServe(["--role", "boss"]);
    const [stderr, code] = await Promise.all([new Response(p.stderr).text(), p.exited]);
    expect(code).toBe(2);
    expect(stderr).toMatch(/argument 'boss' is invalid\. Allowed choices are all, api, worker/);
  }, 60_000);

  test("--role all serves as before", async () => {
    const p = spawnServe(["--role", "all"]);
    const reader = p.stderr.getReader();
    let err = "";
    const dec = new TextDecoder();
    try {
      while (!err.includes("listening on")) {
        const { value, done } = await reader.read();
        if (done) break;
        err += dec.decode(value, { stream: true });
      }
      expect(err).toContain("airlock: listening on http://127.0.0.1:");
    } finally {
      p.kill("SIGTERM");
      await p.exited;
    }
  }, 120_000);
});
