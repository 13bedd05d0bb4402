/**
 * `airlock attach` to a session whose turn an `airlock run` runs (a card waiting at the run's terminal, a
 * real PTY made by util-linux `script`) beside a real `airlock serve` on the same data dir: the run's events
 * and cards are on its own bus, never on the server's streams, so attach says at once where the turn runs
 * (`session_busy`, exit 1, naming the run's pid) rather than print "attached …" and then nothing forever.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { serveFixture, type ServeProcess } from "../harness-serve.ts";
import { apiOf, spawnAttach, until } from "./attach-helpers.ts";

const fixture = serveFixture("airlock-attach-run-");
const { dir, main } = fixture;
let server: ServeProcess;

beforeAll(async () => {
  writeFileSync(join(dir, "turns.yaml"), 'turns:\n  - tool_calls:\n      - name: developer__shell\n        arguments: { command: "echo hi > out.txt" }\n  - text: "done"\n');
  writeFileSync(join(dir, "airlock.yaml"), "provider: { name: scripted, script: turns.yaml }\nmode: smart\n");
  server = await fixture.serve(["--config", join(dir, "airlock.yaml")]);
});

let run: Bun.Subprocess<"pipe", "pipe", "pipe"> | undefined;
afterAll(async () => {
  if (run && run.exitCode === null) {
    run.kill("SIGKILL");
    await run.exited;
  }
});

describe("airlock attach to a turn that an airlock run runs", () => {
  test("says at once that the turn runs in the run's process (session_busy, exit 1); never 'attached' and silence", async () => {
    const ws = join(dir, "ws");
    mkdirSync(ws);
    const cmd = `${process.execPath} ${main} run --data-dir ${dir} --config ${join(dir, "airlock.yaml")} 'write it'`;
    run = Bun.spawn(["script", "-qec", cmd, "/dev/null"], { cwd: ws, stdin: "pipe", stdout: "pipe", stderr: "pipe", env: { ...process.env, AIRLOCK_HOME: "" } });
    let screen = "";
    void (async () => {
      for await (const chunk of run!.stdout.pipeThrough(new TextDecoderStream())) screen += chunk;
    })();
    await until(async () => (screen.includes("allow? [y]once") ? true : undefined), "the run's card at its terminal", 60_000);

    const api = apiOf(server.url, dir);
    const list = await api("GET", "/sessions");
    const sessionId = (list.body.sessions as { id: string; status?: string }[])[0]!.id;
    const a = spawnAttach(main, [sessionId, "--plain", "--data-dir", dir, "--url", server.url]);
    fixture.track(a.proc);
    const code = await Promise.race([a.proc.exited, Bun.sleep(15_000).then(() => "still running")]);
    expect(code).toBe(1);
    expect(a.out()).not.toContain("attached to");
    expect(a.err()).toContain("session_busy");
    // the pid named is the run's, as GET /sessions/:id tells it (its turn is not the server's: not in_flight)
    const detail = await api("GET", `/sessions/${sessionId}`);
    expect(detail.body.in_flight).toBe(false);
    expect(detail.body.turn_elsewhere?.pid).toBeGreaterThan(0);
    expect(a.err()).toContain(`pid ${detail.body.turn_elsewhere.pid}`);
    expect(a.err()).toContain("airlock run");

    // bare attach finds no turn of the server's, and says where a run's turn is answered
    const bare = spawnAttach(main, ["--plain", "--data-dir", dir, "--url", server.url]);
    fixture.track(bare.proc);
    expect(await bare.proc.exited).toBe(1);
    expect(bare.err()).toContain("session_not_found");
    expect(bare.err()).toContain("A turn that an `airlock run` runs is not on the server: that run's terminal answers its cards");

    // the run is untouched: its terminal still answers its card
    run.stdin.write("n\n");
    await run.stdin.flush();
    expect(await run.exited).toBe(0);
    // with no turn running any more, attach follows the session
    const b = spawnAttach(main, [sessionId, "--plain", "--data-dir", dir, "--url", server.url, "--exit-when-idle"]);
    fixture.track(b.proc);
    expect(await b.proc.exited).toBe(0);
    expect(b.out()).toMatch(new RegExp(`^attached to .*${sessionId}`, "m"));
  }, 120_000);
});
