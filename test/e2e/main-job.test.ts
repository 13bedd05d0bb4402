/**
 * airlock's main job, end to end through the compiled binary (copied alone into an empty folder):
 * a person drives a root session over the HTTP API; the model delegates to a subagent; the
 * subagent's script makes a shell call a user hook (and the security floor) answer "ask" for; the
 * card reaches the root's stream and only the root can answer it; approved, the command runs under
 * bubblewrap (writes in the workspace, fails outside); the child's answer reaches the parent; the
 * database holds the conversation and the audit row. Then the same flow on a headless server.
 * The model is the scripted provider replaying examples/demo/turns.yaml.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { Store } from "../../src/store/store.ts";
import { compiledBinary, REPO } from "../harness-binary.ts";
import { openSse, type SseStream } from "../harness.ts";
import { spawnServe, type ServeProcess } from "../harness-serve.ts";

const DEMO_CONFIG = join(REPO, "examples", "demo", "airlock.yaml");
const temps: string[] = [];
const procs: Subprocess[] = [];
function temp(prefix: string, base = tmpdir()): string {
  const d = mkdtempSync(join(base, prefix));
  temps.push(d);
  return d;
}
afterAll(() => {
  for (const p of procs) p.kill("SIGKILL");
  for (const d of temps) rmSync(d, { recursive: true, force: true });
});

interface Server {
  url: string;
  dataDir: string;
  home: string;
  token: string;
  approver: string;
  proc: ServeProcess["proc"];
  stop(): Promise<number>;
}

/** Starts `airlock serve --port 0` from the copied binary with the demo config; resolves once it listens. */
async function startServer(bin: string, extra: string[] = []): Promise<Server> {
  const dataDir = temp("airlock-e2e-data-");
  // HOME outside /tmp: inside the sandbox /tmp is private, so a write there would prove nothing
  const home = temp("airlock-e2e-home-", "/var/tmp");
  const { proc, url } = await spawnServe([bin, "serve", "--port", "0", "--data-dir", dataDir, "--config", DEMO_CONFIG, ...extra], {
    cwd: home,
    env: { PATH: "/usr/local/bin:/usr/bin:/bin", HOME: home, LANG: "C.UTF-8" },
  });
  procs.push(proc);
  return {
    url,
    dataDir,
    home,
    token: readFileSync(join(dataDir, "api-token"), "utf8").trim(),
    approver: readFileSync(join(dataDir, "approver-token"), "utf8").trim(),
    proc,
    async stop() {
      proc.kill("SIGTERM");
      return proc.exited;
    },
  };
}

function api(s: Server, path: string, init: { method?: string; json?: unknown; headers?: Record<string, string> } = {}) {
  return fetch(s.url + path, {
    method: init.method ?? (init.json === undefined ? "GET" : "POST"),
    headers: { authorization: `Bearer ${s.token}`, "content-type": "application/json", ...init.headers },
    ...(init.json === undefined ? {} : { body: JSON.stringify(init.json) }),
  });
}

/** The JSON body of a response (loosely typed: these tests compare against the API contract). */
async function json(res: Promise<Response>): Promise<any> {
  return (await res).json();
}

function sse(s: Server, path: string, json?: unknown): Promise<SseStream> {
  return openSse(s.url + path, {
    method: json === undefined ? "GET" : "POST",
    headers: { authorization: `Bearer ${s.token}`, "content-type": "application/json" },
    ...(json === undefined ? {} : { body: JSON.stringify(json) }),
  });
}

let bin: string;
beforeAll(async () => {
  bin = await compiledBinary();
});

describe("the main job through the compiled binary", () => {
  test("a subagent's script call is approved from the root, runs confined, and is on record", async () => {
    const s = await startServer(bin);
    const ws = temp("airlock-e2e-ws-");

    // 1. a root session (workspace-write, smart) and an unrelated one; /events open on the root only
    const root = await json(api(s, "/sessions", { json: { workspace: ws, mode: "smart", sandbox: "workspace-write" } }));
    expect(root).toMatchObject({ mode: "smart", sandbox: "workspace-write", headless: false, parent_session_id: null });
    const unrelated = await json(api(s, "/sessions", { json: { workspace: ws } }));
    const events = await sse(s, `/sessions/${root.id}/events`);
    await events.waitFor((e) => e.event === "snapshot");

    // 2. reply: the scripted model spawns a subagent whose script calls developer__shell
    const reply = await sse(s, `/sessions/${root.id}/reply`, { message: "Stamp the build." });
    expect(reply.status).toBe(200);

    // 3. the card reaches the root's stream, homed in the child
    const card = (await events.waitFor((e) => e.event === "action_required")).data;
    expect(card).toMatchObject({
      tool: "developer__shell",
      surfaced_in: root.id,
      requires_user_proof: true,
      user_only: true,
    });
    expect(card.home_session_id).not.toBe(root.id);
    expect(card.arguments.command).toContain("build-stamp.txt");
    expect(card.reason).toContain("this shell command writes a file"); // the user hook's reason
    const child = await json(api(s, `/sessions/${card.home_session_id}`));
    expect(child.parent_session_id).toBe(root.id);
    // the same card, once, on the root's reply stream too
    expect((await reply.waitFor((e) => e.event === "action_required")).data.request_id).toBe(card.request_id);
    const listed = await json(api(s, `/sessions/${root.id}/actions`));
    expect(listed.actions.map((a: { request_id: string }) => a.request_id)).toEqual([card.request_id]);

    const decide = (from: string, headers: Record<string, string> = {}) =>
      api(s, `/sessions/${from}/actions/${card.request_id}`, { json: { decision: "allow_once" }, headers });
    // an unrelated session that knows the id resolves nothing
    const foreign = await decide(unrelated.id, { "x-airlock-approver": s.approver });
    expect(foreign.status).toBe(403);
    expect((await json(Promise.resolve(foreign))).error).toBe("outside_scope");
    // the root without the approver token: the floor's ask needs a person's proof
    const unproven = await decide(root.id);
    expect(unproven.status).toBe(403);
    expect((await json(Promise.resolve(unproven))).error).toBe("user_proof_required");
    // the root, with proof: accepted
    const ok = await decide(root.id, { "x-airlock-approver": s.approver });
    expect(ok.status).toBe(200);
    expect((await decide(root.id, { "x-airlock-approver": s.approver })).status).toBe(409);

    // 4. the turn finishes; the command ran under bubblewrap
    const finished = (await events.waitFor((e) => e.event === "turn_finished" && e.data.session_id === root.id, 30_000)).data;
    expect(finished).toMatchObject({ status: "completed", answer: "Done: the subagent stamped the build (see build-stamp.txt)." });
    await reply.ended;
    expect(reply.events.at(-1)?.event).toBe("turn_finished");
    events.close();
    expect(readFileSync(join(ws, "build-stamp.txt"), "utf8")).toMatch(/^built-\d{4}\n$/);
    expect(existsSync(join(s.home, "airlock-escape.txt"))).toBe(false);

    const rootView = await json(api(s, `/sessions/${root.id}`));
    const childView = await json(api(s, `/sessions/${child.id}`));
    expect(await json(api(s, `/sessions/${root.id}/actions`))).toEqual({ actions: [] });
    expect(await s.stop()).toBe(0);

    // the child's result reached the parent
    const spawnResult = rootView.messages.find((m: { role: string; name?: string }) => m.role === "tool" && m.name === "subagent__spawn");
    expect(spawnResult.content).toContain("Stamped the build");
    const scriptResult = childView.messages.find((m: { role: string; name?: string }) => m.role === "tool" && m.name === "code_execution__execute");
    const value = JSON.parse(scriptResult.content);
    const shown = JSON.stringify(value);
    expect(shown).toContain("built-");
    expect(shown).toContain("the sandbox refused the write outside the workspace");
    expect(shown).toContain("workspace-write");

    // the database holds the conversation and the audit rows of the decisions
    const store = await Store.open(join(s.dataDir, "airlock.db"));
    try {
      expect((await store.listMessages(root.id)).map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant"]);
      expect((await store.listMessages(child.id)).map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant"]);
      const audit = await store.listAudit({ request_id: card.request_id });
      expect(audit.filter((a) => a.outcome === "accepted")).toEqual([
        expect.objectContaining({ decision: "allow_once", session_id: root.id, home_session_id: child.id }),
      ]);
      expect(audit.filter((a) => a.outcome === "refused").map((a) => [a.session_id, a.code])).toEqual(
        expect.arrayContaining([
          [unrelated.id, "outside_scope"],
          [root.id, "user_proof_required"],
        ]),
      );
      // cards are user-only: never stored in a conversation
      for (const id of [root.id, child.id, unrelated.id]) {
        for (const m of await store.listMessages(id)) expect(m.content).not.toContain(card.request_id);
      }
    } finally {
      store.close();
    }
  });

  test("on a headless server the same ask is refused at once and the turn ends cleanly", async () => {
    const s = await startServer(bin, ["--headless"]);
    const ws = temp("airlock-e2e-ws-");
    const root = await json(api(s, "/sessions", { json: { workspace: ws, mode: "smart" } }));
    expect(root.headless).toBe(true);
    const reply = await sse(s, `/sessions/${root.id}/reply`, { message: "Stamp the build." });
    await reply.ended;
    expect(reply.events.some((e) => e.event === "action_required")).toBe(false);
    expect(reply.events.at(-1)).toMatchObject({ event: "turn_finished", data: { status: "completed" } });
    expect(await json(api(s, "/actions"))).toMatchObject({ actions: [] });
    const sessions = (await json(api(s, "/sessions"))).sessions as { id: string; parent_session_id: string | null; headless: boolean }[];
    const child = sessions.find((x) => x.parent_session_id === root.id)!;
    expect(child.headless).toBe(true);
    const childView = await json(api(s, `/sessions/${child.id}`));
    const refused = childView.messages.find((m: { role: string; name?: string }) => m.role === "tool" && m.name === "code_execution__execute");
    expect(refused.is_error).toBe(true);
    expect(refused.content).toContain("no_human_surface");
    expect(existsSync(join(ws, "build-stamp.txt"))).toBe(false);
    expect(await s.stop()).toBe(0);
  });

  test("airlock run --headless: one clean result object listing the refused call", async () => {
    const dataDir = temp("airlock-e2e-run-");
    const ws = temp("airlock-e2e-ws-");
    const p = Bun.spawn([bin, "run", "--headless", "--output-format", "json", "--config", DEMO_CONFIG, "--data-dir", dataDir, "--workspace", ws, "Stamp the build."], {
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
      env: { PATH: "/usr/local/bin:/usr/bin:/bin", HOME: dataDir },
    });
    procs.push(p);
    const [code, out] = await Promise.all([p.exited, new Response(p.stdout).text()]);
    const result = JSON.parse(out);
    expect(code).toBe(0);
    expect(result).toMatchObject({ status: "completed", error: null, result: "Done: the subagent stamped the build (see build-stamp.txt)." });
    expect(result.refused_calls).toEqual([expect.objectContaining({ tool: "developer__shell", code: "no_human_surface" })]);
    expect(result.refused_calls[0].session_id).not.toBe(result.session_id);
    expect(existsSync(join(ws, "build-stamp.txt"))).toBe(false);
  });
});
