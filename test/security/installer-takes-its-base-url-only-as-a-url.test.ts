/**
 * @module test/security/installer-takes-its-base-url-only-as-a-url.test
 * scripts/install.sh hands its base URL to curl or wget. A value from `$AIRLOCK_BASE_URL` that starts
 * with `-` must never reach them as an option (curl's `-K FILE` reads a config that can write any file,
 * wget's `-e` runs a wgetrc command), and curl must not expand `{a,b}` or `[1-9]` in it into other URLs.
 * Real curl and wget, a real HTTP server on loopback; run as root and as an unprivileged user.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { sharedTempDir, type TestUser, testUsers } from "../as-user.ts";
import { toolsDir } from "../tools-dir.ts";

const INSTALL = join(import.meta.dir, "..", "..", "scripts", "install.sh");
const BIN = "airlock-linux-x64";
const BODY = "#!/bin/sh\necho airlock\n";
let server: ReturnType<typeof Bun.serve>;
const seen: string[] = [];

beforeAll(() => {
  const files: Record<string, string> = { [BIN]: BODY, SHA256SUMS: `${createHash("sha256").update(BODY).digest("hex")}  ${BIN}\n` };
  server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(req) {
      const path = new URL(req.url).pathname;
      seen.push(decodeURIComponent(path));
      const body = files[path.split("/").pop() ?? ""];
      return body === undefined ? new Response("not found", { status: 404 }) : new Response(body);
    },
  });
});

afterAll(() => server?.stop(true));

describe.each(testUsers())("scripts/install.sh, run as $name", (user: TestUser) => {
  for (const [tool, without] of [["curl", "wget"], ["wget", "curl"]] as const) {
    const run = async (base: string) => {
      const prefix = sharedTempDir("airlock-prefix-");
      const proc = Bun.spawn([...user.prefix, "/bin/sh", INSTALL, "--prefix", prefix], {
        stdin: "ignore",
        stdout: "pipe",
        stderr: "pipe",
        env: { PATH: toolsDir({ without }), HOME: prefix, AIRLOCK_BASE_URL: base },
      });
      const [code, stderr] = await Promise.all([proc.exited, new Response(proc.stderr).text()]);
      return { code, stderr, installed: existsSync(join(prefix, "bin", "airlock")) };
    };

    test(`with ${tool}: an AIRLOCK_BASE_URL starting with '-' is refused before ${tool} runs`, async () => {
      // A config file that, read by `curl -K`, would download into `pwned`; read by wget's `-e`-like
      // parsing it is just as unwelcome. The installer must not hand the value over at all.
      const dir = sharedTempDir("airlock-optdir-");
      const pwned = join(dir, "pwned");
      writeFileSync(join(dir, "SHA256SUMS"), `url = "http://127.0.0.1:${server.port}/${BIN}"\noutput = "${pwned}"\n`, { mode: 0o644 });
      for (const base of [`-K${dir}`, `--config=${dir}`, `-e${dir}`]) {
        const r = await run(base);
        expect(r.code).toBe(1);
        expect(r.stderr).toContain("must start with https://");
        expect(r.installed).toBe(false);
        expect(existsSync(pwned)).toBe(false);
      }
    }, 120_000);

    test(`with ${tool}: braces and brackets in the base URL are sent as written, not expanded`, async () => {
      seen.length = 0;
      const r = await run(`http://127.0.0.1:${server.port}/rel{a,b}[1-2]`);
      expect(seen.some((p) => p.startsWith("/rel{a,b}[1-2]/"))).toBe(true);
      expect(seen.filter((p) => /^\/rel[ab][12]?\//.test(p))).toEqual([]);
      expect(r.code).toBe(0);
      expect(r.installed).toBe(true);
    }, 120_000);
  }
});
