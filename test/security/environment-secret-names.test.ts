/**
 * @module test/security/environment-secret-names.test
 * The secret-name filter applies to every variable, allow-listed families included: `LC_MY_TOKEN`
 * in airlock's environment used to pass into python, js and hooks because every `LC_*` was copied.
 * Run as root and as nobody, through the real launcher, real bubblewrap and the real hook runner.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { testUsers } from "../as-user.ts";
import { ownedDir, probeEnv, removeTempDirs, runProbe, tempBase } from "./probe.ts";

const AIRLOCK_ENV = { LC_ALL: "C", LC_MY_TOKEN: "tok-lc-secret", LC_API_KEY: "key-lc-secret" };

afterAll(removeTempDirs);

describe("secret-looking names never reach a host process", () => {
  test("LC_MY_TOKEN and LC_API_KEY reach neither python, nor js, nor a hook; LC_ALL still does", async () => {
    const seen: Record<string, string[]> = {};
    for (const user of testUsers()) {
      const base = tempBase("airlock-env-");
      const home = ownedDir(user, base, "home");
      const ws = ownedDir(user, base, "ws");
      const env = probeEnv(home, AIRLOCK_ENV);
      const py = await runProbe(
        user,
        { kind: "launch", policy: "read-only", argv: ["python3", "-c", "import os; print(sorted(k for k in os.environ if k.startswith('LC_')))"], cwd: ws },
        env,
      );
      const js = await runProbe(
        user,
        { kind: "launch", policy: "read-only", argv: [process.execPath, "-e", "console.log(JSON.stringify(Object.keys(process.env).filter(k => k.startsWith('LC_')).sort()).replaceAll('\"', \"'\").replaceAll(',', ', '))"], cwd: ws },
        env,
      );
      const hook = await runProbe(user, { kind: "hook", command: `env | grep '^LC_' | cut -d= -f1 | sort | tr '\\n' ' ' > ${join(ws, "hook-env")}`, cwd: ws }, env);
      expect(hook).toEqual({ kind: "allow", inspector: "hook" });
      seen[user.name] = [py.stdout.trim(), js.stdout.trim(), readFileSync(join(ws, "hook-env"), "utf8").trim()];
    }
    for (const [name, got] of Object.entries(seen)) expect({ name, got }).toEqual({ name, got: ["['LC_ALL']", "['LC_ALL']", "LC_ALL"] });
  }, 120_000);
});
