/**
 * @module test/e2e/serve-sigkill-recovery
 * The crash test (issue 13, SPEC §6–§7): the compiled `airlock serve` is killed with SIGKILL at 50+
 * seeded random points of turns that run shell calls, scripts, subagents (foreground and background)
 * and cards, and restarted on the same data dir each time. After every kill and restart:
 * - no host process of the dead server survives (its shell calls carry a marker in their argv);
 * - `PRAGMA integrity_check` is ok;
 * - no turn is left `running` and no session is in flight;
 * - every card the dead process parked and never closed ends `interrupted` in the audit log;
 * - the next reply in every session works, against the fake OpenAI server, which answers 400 to a
 *   history that breaks the tool-call pairing rule (an assistant message with `tool_calls` must be
 *   followed by a tool message for each id, and a tool message must answer such a call).
 * The kill point is a seeded delay after the turns start, or the k-th SSE event of a turn, or (every
 * fifth round, so cards are always covered) the first card. Replay a failure with the seed it prints:
 * `AIRLOCK_CRASH_SEED=<n> bun test test/e2e/serve-sigkill-recovery.test.ts`.
 */
import { Database } from "bun:sqlite";
import { afterAll, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stringify } from "yaml";
import { startFakeOpenAI, textChunks, toolCallChunks, type FakeReply } from "../fixtures/fake-openai.ts";
import { compiledBinary } from "../harness-binary.ts";
import { openSse, type SseStream } from "../harness.ts";
import { spawnServe, type ServeProcess } from "../harness-serve.ts";
import { mulberry32 } from "../fixtures/seeded-random.ts";

const ROUNDS = Number(process.env.AIRLOCK_CRASH_ROUNDS ?? 52);
const SEED = process.env.AIRLOCK_CRASH_SEED ? Number(process.env.AIRLOCK_CRASH_SEED) : Math.floor(Math.random() * 2 ** 31);
/** In the argv of every long host process the test starts (a `sleep` no one else runs). */
const MARKER = "97.4242";
const ROOTS = 3;

const dir = mkdtempSync(join(tmpdir(), "airlock-crash-test-"));
const dataDir = join(dir, "data");
const ws = join(dir, "ws");
const home = join(dir, "home");
for (const d of [dataDir, ws, join(home, ".ssh")]) mkdirSync(d, { recursive: true });
const procs: Bun.Subprocess[] = [];
afterAll(async () => {
  for (const p of procs) {
    p.kill("SIGKILL");
    await p.exited;
  }
  // survivors a failed check named: this test's own processes (their argv carries MARKER), killed by pid
  for (const line of markedProcesses()) {
    try {
      process.kill(Number(line.split(":")[0]), "SIGKILL");
    } catch {
      // already gone
    }
  }
  rmSync(dir, { recursive: true, force: true });
});

// ------------------------------------------------------------------ the model: a fake OpenAI server

/** One step of a turn's plan; the model asks for the plan's calls in one assistant message. */
type Step =
  | { t: "shell"; long: boolean }
  | { t: "script"; long: boolean }
  | { t: "card" }
  | { t: "script_card" }
  | { t: "sub"; bg: boolean; plan: Step[] };

const longCmd = `sleep ${MARKER}`;
const shortCmd = "sleep 0.05; echo ok";

function toolCall(step: Step, id: string): { name: string; arguments: unknown; id: string } {
  switch (step.t) {
    case "shell":
      return { id, name: "developer__shell", arguments: { command: step.long ? longCmd : shortCmd } };
    case "script":
      return {
        id,
        name: "code_execution__execute",
        arguments: {
          code: `const a = await tools.developer__list_dir({ path: "." }); const b = await tools.developer__shell({ command: ${JSON.stringify(step.long ? longCmd : shortCmd)} }); return { a: typeof a, b };`,
        },
      };
    case "card":
      return { id, name: "developer__write_file", arguments: { path: join(home, ".ssh", "config"), content: "Host *\n" } };
    case "script_card":
      return {
        id,
        name: "code_execution__execute",
        arguments: { code: `return await tools.developer__write_file({ path: ${JSON.stringify(join(home, ".ssh", "config"))}, content: "Host *\\n" });` },
      };
    case "sub":
      return { id, name: "subagent__spawn", arguments: { instructions: `plan:${JSON.stringify(step.plan)}`, ...(step.bg ? { background: true } : {}) } };
  }
}

let callSeq = 0;
/** The model. The fake server itself answers 400 to a history that breaks the pairing rule (openAIPairingError). */
const fake = startFakeOpenAI((body): FakeReply => {
  const messages: any[] = body.messages ?? [];
  const last = messages.at(-1);
  if (last?.role === "user" && typeof last.content === "string" && last.content.startsWith("plan:")) {
    const plan = JSON.parse(last.content.slice("plan:".length)) as Step[];
    return toolCallChunks(plan.map((s) => toolCall(s, `call_crash_${++callSeq}`)));
  }
  return textChunks(last?.role === "tool" ? "done" : "hi");
});
afterAll(() => fake.close());

// ------------------------------------------------------------------ the server and its data

let bin = "";
let token = "";
const auth = () => ({ authorization: `Bearer ${token}`, "content-type": "application/json" });

async function serve(): Promise<ServeProcess> {
  const sp = await spawnServe([bin, "serve", "--port", "0", "--data-dir", dataDir], {
    cwd: ws,
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: home, LANG: "C.UTF-8", OPENAI_API_KEY: "sk-fake" },
  });
  procs.push(sp.proc);
  token ||= readFileSync(join(dataDir, "api-token"), "utf8").trim();
  return sp;
}

function db<T>(f: (d: Database) => T): T {
  const d = new Database(join(dataDir, "airlock.db"), { readonly: true });
  try {
    return f(d);
  } finally {
    d.close();
  }
}

/** Processes whose argv carries MARKER (the dead server's shell calls), as "pid: argv". */
function markedProcesses(): string[] {
  const out: string[] = [];
  for (const pid of readdirSync("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    let argv = "";
    try {
      argv = readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ");
    } catch {
      continue; // gone meanwhile
    }
    if (argv.includes(MARKER)) out.push(`${pid}: ${argv.trim()}`);
  }
  return out;
}

/** Waits until no marked process is left (they die with their server); fails naming them after 20 s. */
async function expectNoSurvivors(round: number): Promise<void> {
  let left = markedProcesses();
  for (let waited = 0; left.length > 0 && waited < 20_000; waited += 50) {
    await Bun.sleep(50);
    left = markedProcesses();
  }
  if (left.length > 0) throw new Error(`round ${round}: host processes of the killed server survived it:\n${left.join("\n")}`);
}

function randomPlan(r: () => number, depth = 0): Step[] {
  const n = 1 + Math.floor(r() * 3);
  const plan: Step[] = [];
  for (let i = 0; i < n; i++) {
    const x = r();
    if (x < 0.25) plan.push({ t: "shell", long: r() < 0.5 });
    else if (x < 0.5) plan.push({ t: "script", long: r() < 0.5 });
    else if (x < 0.62) plan.push({ t: "card" });
    else if (x < 0.72) plan.push({ t: "script_card" });
    else if (depth === 0) plan.push({ t: "sub", bg: r() < 0.35, plan: randomPlan(r, 1) });
    else plan.push({ t: "shell", long: false });
  }
  return plan;
}

async function reply(url: string, session: string, message: string): Promise<SseStream> {
  const s = await openSse(`${url}/sessions/${session}/reply`, { method: "POST", headers: auth(), body: JSON.stringify({ message }) });
  if (s.status !== 200) throw new Error(`POST /sessions/${session}/reply answered ${s.status}`);
  return s;
}

/** The checks after a restart: integrity, nothing running or in flight, no card left open, the next reply works everywhere. */
async function checkRecovered(sp: ServeProcess, round: number, sessions: string[]): Promise<void> {
  const where = `round ${round} (seed ${SEED})`;
  expect(db((d) => d.query<{ integrity_check: string }, []>("PRAGMA integrity_check").all().map((r) => r.integrity_check)), where).toEqual(["ok"]);
  expect(db((d) => d.query<{ id: string }, []>("SELECT id FROM turns WHERE status = 'running'").all()), `${where}: turns left running`).toEqual([]);
  const open = db((d) =>
    d
      .query<{ request_id: string }, []>(
        "SELECT request_id FROM audit WHERE kind = 'card_parked' AND request_id NOT IN (SELECT request_id FROM audit WHERE kind = 'card_decision' AND outcome IN ('accepted', 'recorded') AND request_id IS NOT NULL)",
      )
      .all(),
  );
  expect(open, `${where}: cards of the dead server never closed in the audit log`).toEqual([]);
  for (const id of sessions) {
    const got = (await (await fetch(`${sp.url}/sessions/${id}`, { headers: auth() })).json()) as { in_flight: boolean };
    expect(got.in_flight, `${where}: session ${id} in flight after a restart`).toBe(false);
  }
  const streams = await Promise.all(sessions.map((id) => reply(sp.url, id, "hello")));
  const finished = await Promise.all(streams.map((s) => s.waitFor((e) => e.event === "turn_finished", 60_000)));
  finished.forEach((f, i) => expect(f.data, `${where}: the next reply in ${sessions[i]}`).toMatchObject({ status: "completed", answer: "hi" }));
}

test(
  `airlock serve survives ${ROUNDS} SIGKILLs mid-turn: nothing lost, nothing stuck, nothing left running`,
  async () => {
    console.log(`serve-sigkill-recovery: seed ${SEED} (replay with AIRLOCK_CRASH_SEED=${SEED})`);
    try {
      const r = mulberry32(SEED);
      bin = await compiledBinary();
      writeFileSync(
        join(dataDir, "airlock.yaml"),
        stringify({
          provider: { name: "openai", base_url: fake.url, model: "fake-model", max_retries: 0 },
          mode: "autonomous",
          sandbox: "workspace-write",
        }),
      );
      let sp = await serve();
      const roots: string[] = [];
      for (let i = 0; i < ROOTS; i++) {
        const res = await fetch(`${sp.url}/sessions`, { method: "POST", headers: auth(), body: JSON.stringify({ workspace: ws }) });
        expect(res.status).toBe(201);
        roots.push(((await res.json()) as { id: string }).id);
      }
      const known = new Set(roots);
      let interruptedCards = 0;
      for (let round = 1; round <= ROUNDS; round++) {
        // start the round's turns: one or more roots, each with a random plan
        const cardRound = round % 5 === 0;
        const chosen = roots.filter(() => r() < 0.6);
        if (chosen.length === 0) chosen.push(roots[Math.floor(r() * ROOTS)]!);
        const plans = chosen.map((_, i) => (cardRound && i === 0 ? [{ t: "card" } as Step, ...randomPlan(r)] : randomPlan(r)));
        const streams = await Promise.all(chosen.map((id, i) => reply(sp.url, id, `plan:${JSON.stringify(plans[i])}`)));
        const point = r();
        if (cardRound) {
          await streams[0]!.waitFor((e) => e.event === "action_required" || e.event === "turn_finished", 60_000);
        } else if (point < 0.5) {
          await Bun.sleep(Math.floor(r() * 1500)); // a seeded delay: the random kill point itself
        } else {
          const k = 1 + Math.floor(r() * 12);
          const s = streams[Math.floor(r() * streams.length)]!;
          // the k-th event of one turn; a turn parked on a card or a long call may never send it, so a seeded cap ends the wait
          await s.waitFor((e) => s.events.length >= k || e.event === "turn_finished", 500 + Math.floor(r() * 2000)).catch(() => undefined);
        }
        sp.proc.kill("SIGKILL");
        await sp.proc.exited;
        await Promise.all(streams.map((s) => s.ended));
        await expectNoSurvivors(round);

        sp = await serve();
        const all = db((d) => d.query<{ id: string }, []>("SELECT id FROM sessions").all().map((x) => x.id));
        const fresh = all.filter((id) => !known.has(id));
        for (const id of fresh) known.add(id);
        await checkRecovered(sp, round, [...roots, ...fresh]);
        interruptedCards = db((d) => d.query<{ n: number }, []>("SELECT COUNT(*) AS n FROM audit WHERE kind = 'card_decision' AND decision = 'interrupted'").get()!.n);
      }
      // every fifth round killed the server with a card pending: those cards must be in the audit as interrupted
      expect(interruptedCards).toBeGreaterThanOrEqual(Math.floor(ROUNDS / 5));
      sp.proc.kill("SIGTERM");
      expect(await sp.proc.exited).toBe(0);
    } catch (e) {
      const err = e as Error;
      err.message = `[serve-sigkill-recovery seed ${SEED}: replay with AIRLOCK_CRASH_SEED=${SEED}] ${err.message}`;
      throw err;
    }
  },
  // Every wait inside is for an event; this bound only stops a stuck run. 52 rounds took 57 s in the
  // suite's record, 204 s at load ~17 and over 300 s at load ~13-20 beside a disk-heavy file (2026-12-02).
  900_000,
);
