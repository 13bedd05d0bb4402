/**
 * One data dir, several processes (issue 13 item 8), with the real `airlock serve` and `airlock run`
 * processes: a run beside a server leaves the server's live turn alone; a second server on the same data
 * dir refuses and names the first (a killed server's lock is taken over); two runs at once both complete;
 * a read-only or full data dir is a clear `data_dir_unusable` error (exit 2), as root and as nobody.
 */
import { describe, expect, test } from "bun:test";
import { chmodSync, chownSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { IS_ROOT, sharedTempDir, testUsers } from "../as-user.ts";
import { openSse } from "../harness.ts";
import { MAIN, serveScratch, type ServeProcess } from "../harness-serve.ts";

const scratch = serveScratch();

function dataDir(): string {
  const dir = scratch.dir("airlock-datadir-");
  mkdirSync(join(dir, "ws"));
  writeFileSync(join(dir, "serve.yaml"), "mode: smart\nprovider: { name: scripted, script: serve-turns.yaml }\n");
  writeFileSync(
    join(dir, "serve-turns.yaml"),
    'turns:\n  - tool_calls: [{ name: developer__write_file, arguments: { path: "out.txt", content: "w" } }]\n  - text: "served"\n',
  );
  writeFileSync(join(dir, "run.yaml"), "provider: { name: scripted, script: run-turns.yaml }\n");
  writeFileSync(join(dir, "run-turns.yaml"), 'turns:\n  - text: "ran"\n');
  return dir;
}

async function serve(dir: string): Promise<ServeProcess> {
  return await scratch.serve(dir, ["--config", join(dir, "serve.yaml")]);
}

/** Runs `airlock ARGS` to its end; returns exit code, stdout and stderr. */
async function airlock(args: string[], o: { prefix?: string[]; cwd?: string; wrap?: (argv: string[]) => string[] } = {}): Promise<{ code: number; out: string; err: string }> {
  const argv = [...(o.prefix ?? []), process.execPath, MAIN, ...args];
  const p = Bun.spawn(o.wrap ? o.wrap(argv) : argv, { cwd: o.cwd, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  scratch.track(p);
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { code, out, err };
}

function headers(dir: string): Record<string, string> {
  return { authorization: `Bearer ${readFileSync(join(dir, "api-token"), "utf8").trim()}`, "content-type": "application/json" };
}

describe("one data dir, several processes", () => {
  test("an airlock run on a running server's data dir leaves the server's live turn running, and it ends completed", async () => {
    const dir = dataDir();
    const sp = await serve(dir);
    const h = headers(dir);
    const s = (await (await fetch(`${sp.url}/sessions`, { method: "POST", headers: h, body: JSON.stringify({ workspace: join(dir, "ws") }) })).json()) as { id: string };
    const reply = await openSse(`${sp.url}/sessions/${s.id}/reply`, { method: "POST", headers: h, body: JSON.stringify({ message: "write" }) });
    const card = await reply.waitFor((e) => e.event === "action_required", 60_000);

    const run = await airlock(["run", "--headless", "--data-dir", dir, "--config", join(dir, "run.yaml"), "--workspace", join(dir, "ws"), "hello"]);
    expect(run.code).toBe(0);
    const mid = (await (await fetch(`${sp.url}/sessions/${s.id}`, { headers: h })).json()) as any;
    expect(mid.turns.map((t: any) => t.status)).toEqual(["running"]);

    const res = await fetch(`${sp.url}/sessions/${s.id}/actions/${card.data.request_id}`, { method: "POST", headers: h, body: JSON.stringify({ decision: "allow_once" }) });
    expect(res.status).toBe(200);
    expect((await reply.waitFor((e) => e.event === "turn_finished", 60_000)).data).toMatchObject({ status: "completed", answer: "served" });
    const after = (await (await fetch(`${sp.url}/sessions/${s.id}`, { headers: h })).json()) as any;
    expect(after.turns.map((t: any) => t.status)).toEqual(["completed"]);
    sp.proc.kill("SIGTERM");
    expect(await sp.proc.exited).toBe(0);
  }, 120_000);

  test("a second serve on the same data dir refuses, naming the first's pid and address; after the first is killed a new one starts", async () => {
    const dir = dataDir();
    const first = await serve(dir);
    const second = await airlock(["serve", "--port", "0", "--data-dir", dir, "--config", join(dir, "serve.yaml")]);
    expect(second.code).toBe(2);
    expect(second.err).toContain("data_dir_in_use");
    expect(second.err).toContain(`pid ${first.proc.pid}`);
    expect(second.err).toContain(first.url);
    // the first still serves
    expect((await fetch(`${first.url}/health`)).status).toBe(200);
    first.proc.kill("SIGKILL");
    await first.proc.exited;
    const third = await serve(dir);
    expect((await fetch(`${third.url}/health`)).status).toBe(200);
    third.proc.kill("SIGTERM");
    expect(await third.proc.exited).toBe(0);
  }, 120_000);

  test("several airlock run at once on one fresh data dir all complete, and none marks another's turn interrupted", async () => {
    const dir = dataDir();
    const args = ["run", "--headless", "--output-format", "json", "--data-dir", dir, "--config", join(dir, "run.yaml"), "--workspace", join(dir, "ws"), "hello"];
    const runs = await Promise.all(Array.from({ length: 6 }, () => airlock(args)));
    // a failed run's stderr in the diff: what went wrong, not only that it did
    expect(runs.map((r) => (r.code === 0 ? 0 : `exit ${r.code}: ${r.err}`))).toEqual([0, 0, 0, 0, 0, 0]);
    expect(runs.map((r) => JSON.parse(r.out).status)).toEqual(Array(6).fill("completed"));
    expect(runs.filter((r) => r.err.includes("interrupted"))).toEqual([]);
  }, 120_000);
});

describe("unusable data dir", () => {
  for (const user of testUsers()) {
    test(`a read-only data dir is a clear data_dir_unusable error, exit 2, no stack (as ${user.name})`, async () => {
      const shared = sharedTempDir("airlock-ro-");
      const dir = join(shared, "data");
      mkdirSync(dir);
      if (IS_ROOT) chownSync(dir, user.uid, user.uid); // this user's own folder: what is refused is the write, not the owner
      chmodSync(dir, 0o555);
      writeFileSync(join(shared, "run.yaml"), "provider: { name: scripted }\n");
      // root ignores file modes: a read-only bind mount makes the directory read-only for it too
      const wrap = user.uid === 0 ? (argv: string[]) => ["unshare", "-m", "sh", "-c", `mount --bind "${dir}" "${dir}" && mount -o remount,ro,bind "${dir}" && exec "$@"`, "sh", ...argv] : undefined;
      for (const args of [
        ["run", "--headless", "--data-dir", dir, "--config", join(shared, "run.yaml"), "--workspace", shared, "hi"],
        ["serve", "--port", "0", "--data-dir", dir, "--config", join(shared, "run.yaml")],
      ]) {
        const r = await airlock(args, { prefix: user.prefix, cwd: shared, ...(wrap ? { wrap } : {}) });
        expect({ code: r.code, unusable: r.err.includes("airlock: data_dir_unusable:"), says: /cannot be written/.test(r.err), stack: /\n\s+at /.test(r.err) }).toEqual({
          code: 2,
          unusable: true,
          says: true,
          stack: false,
        });
      }
    }, 120_000);
  }

  test.skipIf(!IS_ROOT)("a full data dir is a clear data_dir_unusable error, exit 2, for a new and for an existing database", async () => {
    const shared = sharedTempDir("airlock-full-");
    const dir = join(shared, "data");
    mkdirSync(dir);
    // a model is configured (a run without one is refused before it opens the data dir)
    writeFileSync(join(shared, "turns.yaml"), "turns:\n  - text: hi\n");
    writeFileSync(join(shared, "run.yaml"), "provider: { name: scripted, script: turns.yaml }\n");
    const run = `"${process.execPath}" "${MAIN}" run --headless --data-dir "${dir}" --config "${join(shared, "run.yaml")}" --workspace "${shared}" hi`;
    // a private tmpfs of 1 MiB: one run creates the database, then the disk is filled, then a run on it; then a new database on the full disk
    const script = [
      `mount -t tmpfs -o size=1m,mode=0700 tmpfs "${dir}"`,
      `${run} >/dev/null 2>&1 || { echo "first run failed"; exit 9; }`,
      `dd if=/dev/zero of="${dir}/fill" bs=4k >/dev/null 2>&1`,
      `${run}; echo "rc=$?"`,
      `rm -f "${dir}"/airlock.db* "${dir}"/*-token`,
      `${run}; echo "rc=$?"`,
    ].join("\n");
    const p = Bun.spawn(["unshare", "-m", "sh", "-c", script], { cwd: shared, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
    scratch.track(p);
    const [out, err] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
    expect(out.trim().split("\n")).toEqual(["rc=2", "rc=2"]);
    expect(err.match(/airlock: data_dir_unusable: .* is full/g)?.length).toBe(2);
    expect(/\n\s+at /.test(err)).toBe(false);
  }, 120_000);

  test.skipIf(!IS_ROOT)("a data dir that fills up under a running serve answers 503 data_dir_unusable, not a 500 with a stack", async () => {
    const shared = sharedTempDir("airlock-fullserve-");
    const dir = join(shared, "data");
    const ws = join(shared, "ws");
    mkdirSync(dir);
    mkdirSync(ws);
    const log = join(shared, "serve.err");
    // in a private mount namespace: serve on a 2 MiB tmpfs, wait for its listening line, fill the disk, create a session
    const script = [
      "set -e",
      `mount -t tmpfs -o size=2m,mode=0700 tmpfs "${dir}"`,
      `"${process.execPath}" "${MAIN}" serve --port 0 --data-dir "${dir}" 2>"${log}" &`,
      "SP=$!",
      `until grep -q "listening on" "${log}"; do kill -0 $SP; sleep 0.1; done`,
      `URL=$(grep -o "http://[^ ]*" "${log}" | head -1)`,
      `dd if=/dev/zero of="${dir}/fill" bs=4k >/dev/null 2>&1 || true`,
      `curl -s -o "${shared}/body.json" -w "%{http_code}" -H "authorization: Bearer $(cat "${dir}/api-token")" -H "content-type: application/json" -d '{"workspace":"${ws}"}' "$URL/sessions"`,
      "kill -TERM $SP; wait $SP || true",
    ].join("\n");
    const p = Bun.spawn(["unshare", "-m", "sh", "-c", script], { cwd: shared, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
    scratch.track(p);
    const [out] = await Promise.all([new Response(p.stdout).text(), p.exited]);
    expect(out.trim()).toBe("503");
    expect(JSON.parse(readFileSync(join(shared, "body.json"), "utf8"))).toMatchObject({ error: "data_dir_unusable", message: expect.stringContaining("is full") });
    expect(/\n\s+at /.test(readFileSync(log, "utf8"))).toBe(false);
  }, 120_000);
});
