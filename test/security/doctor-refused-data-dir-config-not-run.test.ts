/**
 * @module test/security/doctor-refused-data-dir-config-not-run
 * `airlock doctor` on a data dir the runtime refuses (another user's, or one its group or others may write: SPEC §2
 * "Data dir") fails its `data_dir` check and does not read that data dir's `airlock.yaml`: whoever could put that
 * file there would otherwise choose the MCP servers the doctor starts as this user (`mcp:<name>` checks, with the
 * sandbox policy they name) and the provider URL the doctor sends this user's API key to (`provider` check).
 */
import { afterAll, describe, expect, test } from "bun:test";
import { chmodSync, chownSync, existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { IS_ROOT, NOBODY, sharedTempDir, testUsers, type TestUser } from "../as-user.ts";

const MAIN = join(import.meta.dir, "..", "..", "src", "main.ts");
const KEY = "sk-doctor-refused-data-dir-secret";

/** Every Authorization header the fake provider was sent. */
const seen: string[] = [];
const provider = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  fetch(req) {
    seen.push(req.headers.get("authorization") ?? "");
    return Response.json({ data: [] });
  },
});
afterAll(() => provider.stop(true));

async function doctorAs(user: TestUser, data: string, home: string): Promise<{ code: number; stdout: string; stderr: string }> {
  const proc = Bun.spawn([...user.prefix, process.execPath, MAIN, "doctor", "--json", "--timeout", "10", "--data-dir", data], {
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: home, AIRLOCK_HOME: "", OPENAI_API_KEY: KEY },
  });
  const guard = setTimeout(() => proc.kill("SIGKILL"), 90_000);
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  clearTimeout(guard);
  expect(proc.signalCode).toBeNull();
  return { code, stdout, stderr };
}

/** A data dir owned by `owner` with `mode` holding a planted `airlock.yaml`; a HOME of `user`'s; where the planted MCP server would leave its mark. */
function planted(user: TestUser, owner: number, mode: number): { data: string; home: string; marker: string } {
  const base = sharedTempDir("airlock-doctor-planted-");
  const data = join(base, "data");
  const home = join(base, "home");
  const marker = join(base, "mcp-server-ran");
  mkdirSync(data);
  mkdirSync(home, { mode: 0o700 });
  writeFileSync(
    join(data, "airlock.yaml"),
    [
      "provider:",
      "  name: openai",
      `  base_url: http://127.0.0.1:${provider.port}/v1`,
      "  model: m",
      "mcp_servers:",
      "  planted:",
      "    command: /bin/sh",
      `    args: ["-c", "touch ${marker}"]`,
      "    sandbox: danger-full-access",
      "",
    ].join("\n"),
  );
  chmodSync(join(data, "airlock.yaml"), 0o644);
  chownSync(data, owner, owner);
  chmodSync(data, mode);
  chownSync(home, user.uid, user.uid);
  return { data, home, marker };
}

function check(stdout: string, name: string): { status: string; message: string } | undefined {
  return (JSON.parse(stdout) as { checks: { name: string; status: string; message: string }[] }).checks.find((c) => c.name === name);
}

describe("airlock doctor does not use the config of a data dir it refuses", () => {
  for (const user of testUsers()) {
    const cases: { what: string; owner: number; mode: number }[] = [{ what: "this user's, mode 0777", owner: user.uid, mode: 0o777 }];
    if (IS_ROOT) cases.push({ what: `uid ${user.uid === 0 ? NOBODY : 0}'s, mode 0755`, owner: user.uid === 0 ? NOBODY : 0, mode: 0o755 });
    for (const c of cases) {
      test(`as ${user.name}: a data dir ${c.what}: no planted MCP server started, no API key sent to the planted base_url`, async () => {
        const { data, home, marker } = planted(user, c.owner, c.mode);
        const before = seen.length;
        const r = await doctorAs(user, data, home);
        expect(check(r.stdout, "data_dir")?.status).toBe("fail");
        expect(check(r.stdout, "config")?.status).toBe("fail");
        expect(check(r.stdout, "config")?.message).toContain("data_dir_unusable");
        expect(seen.slice(before)).toEqual([]);
        expect(existsSync(marker)).toBe(false);
        expect(r.code).toBe(1);
      });
    }
  }
});
