/**
 * @module test/security/serve-lock-url-names-the-bound-address
 * The client commands send their token to the URL `airlock serve` records in its `serve.lock`.
 * FINDING (high): with `--host localhost` the server bound one address (getaddrinfo's first: `127.0.0.1` here) but
 * recorded `http://localhost:PORT`, a name the client's fetch tries as `::1` first. The same port on `::1` was free,
 * and any local user — `nobody`, no token, no access to the data dir — who bound it got the API token of
 * `airlock actions list` (and of `attach`, `console`, `schedule`).
 * Fixed: a server whose host is a name records the loopback address it bound (`127.0.0.1` or `[::1]`, names the Host
 * check accepts), so the client connects to the very socket the server listens on; so do the console link (the token
 * in its fragment, which the page that answers reads) and the curl line serve prints.
 * Real processes: `airlock serve` as the current user, the squatter as `nobody` when the tests run as root. Skipped
 * where `::1` cannot be bound.
 */
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { testUsers } from "../as-user.ts";
import { spawnServe } from "../harness-serve.ts";

const MAIN = join(import.meta.dir, "..", "..", "src", "main.ts");
const dirs: string[] = [];
const procs: Bun.Subprocess[] = [];
afterAll(async () => {
  for (const p of procs) {
    p.kill("SIGKILL");
    await p.exited;
  }
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** Whether this machine has an IPv6 loopback to bind. */
function hasIpv6Loopback(): boolean {
  try {
    Bun.serve({ hostname: "::1", port: 0, fetch: () => new Response("") }).stop(true);
    return true;
  } catch {
    return false;
  }
}

/** A port nothing listens on (bound, then closed). */
async function deadPort(): Promise<number> {
  const s = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("") });
  const port = s.port!;
  await s.stop(true);
  return port;
}

/** The other user's server on HOST:PORT: says `bound`, prints the Authorization header of every request (`AUTH …`). */
const SQUATTER = `
const s = Bun.serve({ hostname: process.argv[1], port: Number(process.argv[2]), fetch(r) {
  console.log("AUTH " + (r.headers.get("authorization") ?? "-") + " " + new URL(r.url).pathname);
  return Response.json({ actions: [] });
} });
console.log("bound " + s.port);
setTimeout(() => process.exit(0), 30000);
`;

test.skipIf(!hasIpv6Loopback())("serve --host localhost: a client never sends its token to whoever binds the same port on the other loopback address", async () => {
  const d = mkdtempSync(join(tmpdir(), "airlock-lockhost-"));
  dirs.push(d);
  writeFileSync(join(d, "airlock.yaml"), `mode: smart\nprovider: { name: scripted, script: turns.yaml }\nserver: { port: ${await deadPort()} }\n`);
  writeFileSync(join(d, "turns.yaml"), 'turns:\n  - text: "done"\n');
  const sp = await spawnServe([process.execPath, MAIN, "serve", "--host", "localhost", "--port", "0", "--data-dir", d]);
  procs.push(sp.proc);
  const token = readFileSync(join(d, "api-token"), "utf8").trim();
  const port = Number(new URL(sp.url).port);

  // the other user (nobody when the tests run as root) binds whichever loopback address the server left free
  const other = testUsers().at(-1)!;
  let squat = { out: "" };
  for (const host of ["::1", "127.0.0.1"]) {
    const p = Bun.spawn([...other.prefix, process.execPath, "-e", SQUATTER, host, String(port)], { cwd: "/", stdin: "ignore", stdout: "pipe", stderr: "ignore" });
    procs.push(p);
    const mine = { out: "" };
    void (async () => {
      for await (const c of p.stdout.pipeThrough(new TextDecoderStream())) mine.out += c;
    })();
    let exited = false;
    void p.exited.then(() => (exited = true));
    while (!mine.out.includes("bound") && !exited) await Bun.sleep(10);
    if (mine.out.includes("bound")) {
      squat = mine;
      break;
    }
  }
  expect(squat.out).toContain(`bound ${port}`);

  const p = Bun.spawn([process.execPath, MAIN, "actions", "list", "--json", "--data-dir", d], {
    cwd: d,
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
    env: { ...process.env, AIRLOCK_HOME: "", AIRLOCK_URL: "", NO_COLOR: "1" },
  });
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  await Bun.sleep(200);
  expect(squat.out).not.toContain(token);
  expect(squat.out).not.toContain("AUTH ");
  expect({ code, stderr }).toEqual({ code: 0, stderr: "" }); // it reached the real server
  expect(stdout).toContain('"actions"');
  // serve's own console link (the token in its fragment, read by whatever page answers) and curl line name it too
  expect(sp.stderr()).toContain(`airlock: console: http://127.0.0.1:${port}/#t=`);
  expect(sp.stderr()).toContain(` http://127.0.0.1:${port}/sessions\n`);
}, 60_000);
