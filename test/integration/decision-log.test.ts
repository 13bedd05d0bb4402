/**
 * The decision log over the real runtime (scripted provider, real HTTP on loopback, the CLI as a
 * subprocess): every judged call is one `call_judged` row with the inspector that decided it and the
 * refusal's code; an answered card shows who answered and with what proof; refused answer attempts are
 * there; `GET /audit` filters; `airlock audit` prints text, `--json` and `--export jsonl`.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { join } from "node:path";
import type { AuditRow } from "../../src/store/store.ts";
import { harnessSse, type Harness } from "../harness.ts";
import { decide, startGateHarness } from "./gate-helpers.ts";

const MAIN = join(import.meta.dir, "..", "..", "src", "main.ts");

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

type Detail = Record<string, any>;
const detail = (r: AuditRow) => r.detail as Detail;

/** The call_judged rows of `sessionId`'s tree, oldest first, read through the API. */
async function judged(harness: Harness, sessionId: string): Promise<AuditRow[]> {
  const res = await harness.api(`/audit?session=${sessionId}&limit=1000`);
  expect(res.status).toBe(200);
  const body = (await res.json()) as { audit: AuditRow[] };
  return body.audit.filter((r) => r.kind === "call_judged").reverse();
}

/** Runs the CLI against `dataDir` (stdin closed); exit code, stdout and stderr. */
async function airlock(args: string[], dataDir: string): Promise<{ code: number; stdout: string; stderr: string }> {
  const proc = Bun.spawn([process.execPath, MAIN, ...args, "--data-dir", dataDir], {
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: dataDir },
  });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, stdout, stderr };
}

const HEADLESS_TURNS = `
turns:
  - tool_calls:
      - { name: developer__read_file, arguments: { path: ".env" } }
      - { name: developer__write_file, arguments: { path: "a.txt", content: "x" } }
      - { name: developer__shell, arguments: { command: "ls" } }
      - { name: nosuch__tool, arguments: {} }
      - { name: developer__list_dir, arguments: { path: "." } }
      - name: code_execution__execute
        arguments:
          code: |
            return await tools.developer__write_file({ path: "b.txt", content: "y" });
  - text: "done"
`;

describe("the decision log of a headless run", () => {
  test("every call is logged once: refusals with the inspector and code that refused them, allowed calls with the inspector that allowed them", async () => {
    h = await startGateHarness({
      config: { provider: { name: "scripted", script: "turns.yaml" }, mode: "smart", tools: { developer__shell: { permission: "deny" } } },
      files: { "turns.yaml": HEADLESS_TURNS },
      workspaceFiles: { ".env": "API=1" },
    });
    const s = await h.createSession({ mode: "smart", headless: true });
    expect(await h.rt.runTurn(s.id, "go")).toMatchObject({ status: "completed", answer: "done" });

    // the model's calls run in parallel, so their rows are written as each ends: put them in the model's
    // order (a script's call just before the script's own row)
    const order = (await h.rt.store.listMessages(s.id)).filter((m) => m.role === "tool").map((m) => m.tool_call_id);
    const pos = (r: AuditRow) => (detail(r).from_script ? order.indexOf(detail(r).parent_call_id) - 0.5 : order.indexOf(detail(r).call_id));
    const rows = (await judged(h, s.id)).sort((a, b) => pos(a) - pos(b));
    const view = rows.map((r) => ({
      tool: detail(r).tool,
      decision: r.decision,
      code: r.code,
      inspector: detail(r).inspector,
      ran: detail(r).ran,
      from_script: detail(r).from_script,
    }));
    expect(view).toEqual([
      { tool: "developer__read_file", decision: "ask", code: "no_human_surface", inspector: "sensitive_ops", ran: false, from_script: false },
      { tool: "developer__write_file", decision: "ask", code: "no_human_surface", inspector: "mode", ran: false, from_script: false },
      { tool: "developer__shell", decision: "deny", code: "denied", inspector: "tool_config", ran: false, from_script: false },
      { tool: "nosuch__tool", decision: "refused", code: "unknown_tool", inspector: undefined, ran: false, from_script: false },
      { tool: "developer__list_dir", decision: "allow", code: null, inspector: "mode", ran: true, from_script: false },
      // the script's call ends before the script's: its row comes first
      { tool: "developer__write_file", decision: "ask", code: "no_human_surface", inspector: "mode", ran: false, from_script: true },
      { tool: "code_execution__execute", decision: "allow", code: null, inspector: "mode", ran: true, from_script: false },
    ]);
    for (const r of rows) {
      expect(r).toMatchObject({ session_id: s.id, home_session_id: s.id, outcome: "recorded", request_id: null, actor: null });
      expect(detail(r).turn_id).toMatch(/^turn_/);
      expect(detail(r).ms.total).toBeGreaterThanOrEqual(0);
      expect(detail(r).ms.parked).toBe(0);
    }
    // the call ids are the model's (and the script's call names its parent)
    const toolMsgs = (await h.rt.store.listMessages(s.id)).filter((m) => m.role === "tool").map((m) => m.tool_call_id);
    expect(rows.filter((r) => !detail(r).from_script).map((r) => detail(r).call_id)).toEqual(toolMsgs);
    const script = rows.find((r) => r.decision === "ask" && detail(r).from_script)!;
    expect(detail(script).parent_call_id).toBe(detail(rows.at(-1)!).call_id);
    // refusals carry the reason and every inspector's verdict; judged calls their judging time
    const floor = rows[0]!;
    expect(detail(floor).reason).toContain(".env");
    expect(detail(floor).verdicts).toContainEqual({ inspector: "sensitive_ops", kind: "ask" });
    expect(detail(floor).error.code).toBe("no_human_surface");
    expect(detail(rows[2]!).verdicts).toContainEqual({ inspector: "tool_config", kind: "deny", code: "denied" });
    expect(detail(rows[3]!).ms.judge).toBeUndefined();
    for (const r of rows.filter((x) => x.decision !== "refused")) expect(detail(r).ms.judge).toBeGreaterThanOrEqual(0);
    expect(detail(rows[4]!).ms.run).toBeGreaterThan(0);
  });
});

const CARD_TURNS = `
turns:
  - tool_calls: [{ name: subagent__spawn, arguments: { instructions: "child" } }]
  - text: "root done"
subagents:
  - turns:
      - tool_calls: [{ name: developer__read_file, arguments: { path: ".env" } }]
      - text: "child done"
`;

/** A root whose child reads `.env` (a floor ask needing user proof), answered from the root: first two refused attempts, then the approver token's allow. */
async function answeredCard(harness: Harness) {
  const root = await harness.createSession({ mode: "autonomous" });
  const unrelated = await harness.createSession();
  const reply = await harnessSse(harness, `/sessions/${root.id}/reply`, { method: "POST", json: { message: "go" } });
  const card = (await reply.waitFor((e) => e.event === "action_required")).data;
  expect(await decide(harness, unrelated.id, card.request_id, "allow_once")).toMatchObject({ status: 403, body: { error: "outside_scope" } });
  expect(await decide(harness, root.id, card.request_id, "allow_once")).toMatchObject({ status: 403, body: { error: "user_proof_required" } });
  expect(await decide(harness, root.id, card.request_id, "allow_once", harness.rt.tokens.approverToken!)).toMatchObject({ status: 200 });
  expect((await reply.waitFor((e) => e.event === "turn_finished")).data).toMatchObject({ status: "completed" });
  reply.close();
  return { root: root.id, child: card.home_session_id as string, unrelated: unrelated.id, requestId: card.request_id as string };
}

describe("the decision log of an answered card", () => {
  test("the call's row names the card, who answered it and with proof; the refused attempts are rows of that card", async () => {
    h = await startGateHarness({
      config: { provider: { name: "scripted", script: "turns.yaml" }, mode: "autonomous" },
      files: { "turns.yaml": CARD_TURNS },
      workspaceFiles: { ".env": "API=1" },
    });
    const c = await answeredCard(h);
    const read = (await judged(h, c.child)).find((r) => detail(r).tool === "developer__read_file")!;
    expect(read).toMatchObject({ decision: "ask", code: null, request_id: c.requestId, actor: c.root, session_id: c.child });
    expect(detail(read)).toMatchObject({
      inspector: "sensitive_ops",
      ran: true,
      answer: { request_id: c.requestId, decision: "allow_once", decided_in: c.root, proof: true, via: "http" },
    });
    expect(detail(read).ms.parked).toBeGreaterThan(0);
    expect(detail(read).ms.run).toBeGreaterThan(0);

    const res = await h.api(`/audit?session=${c.child}&limit=1000`);
    const cardRows = ((await res.json()) as { audit: AuditRow[] }).audit.filter((r) => r.request_id === c.requestId).reverse();
    expect(cardRows.map((r) => [r.kind, r.outcome, r.session_id, r.code, r.kind === "card_decision" ? detail(r).proof : undefined])).toEqual([
      ["card_parked", "recorded", c.child, null, undefined],
      ["card_decision", "refused", c.unrelated, "outside_scope", false],
      ["card_decision", "refused", c.root, "user_proof_required", false],
      ["card_decision", "accepted", c.root, null, true],
      ["call_judged", "recorded", c.child, null, undefined],
    ]);
  });

  test("a denied card: the call's row is the ask refused `denied`, answered from the root without proof", async () => {
    h = await startGateHarness({
      config: { provider: { name: "scripted", script: "turns.yaml" }, mode: "autonomous" },
      files: { "turns.yaml": CARD_TURNS },
      workspaceFiles: { ".env": "API=1" },
    });
    const root = await h.createSession({ mode: "autonomous" });
    const reply = await harnessSse(h, `/sessions/${root.id}/reply`, { method: "POST", json: { message: "go" } });
    const card = (await reply.waitFor((e) => e.event === "action_required")).data;
    expect(await decide(h, root.id, card.request_id, "deny")).toMatchObject({ status: 200 });
    await reply.waitFor((e) => e.event === "turn_finished");
    reply.close();
    const read = (await judged(h, card.home_session_id)).find((r) => detail(r).tool === "developer__read_file")!;
    expect(read).toMatchObject({ decision: "ask", code: "denied", request_id: card.request_id, actor: root.id });
    expect(detail(read)).toMatchObject({ ran: false, answer: { decision: "deny", decided_in: root.id, proof: false, via: "http" } });
    expect(detail(read).ms.run).toBe(0);
  });

  test("GET /audit filters by session tree, decision or code, since (id or time) and limit, newest first; a bad query is 400 naming the parameter", async () => {
    h = await startGateHarness({
      config: { provider: { name: "scripted", script: "turns.yaml" }, mode: "autonomous" },
      files: { "turns.yaml": CARD_TURNS },
      workspaceFiles: { ".env": "API=1" },
    });
    const c = await answeredCard(h);
    const get = async (q: string) => {
      const res = await h!.api(`/audit?${q}`);
      return { status: res.status, body: (await res.json()) as any };
    };
    const all = (await get("limit=1000")).body.audit as AuditRow[];
    const ids = all.map((r) => r.id);
    expect(ids).toEqual([...ids].sort((a, b) => b - a));
    // the root's spawn, the card parked, three answer attempts, the child's read
    expect(all.map((r) => r.kind)).toEqual(["call_judged", "call_judged", "card_decision", "card_decision", "card_decision", "card_parked"]);

    // the root's tree holds the child's rows (and the unrelated session's attempt at the child's card); the child's tree not the root's own call
    const rootTree = (await get(`session=${c.root}&limit=1000`)).body.audit as AuditRow[];
    const childTree = (await get(`session=${c.child}&limit=1000`)).body.audit as AuditRow[];
    expect(rootTree.map((r) => r.id)).toEqual(ids);
    expect(rootTree.some((r) => r.kind === "call_judged" && detail(r).tool === "subagent__spawn")).toBe(true);
    expect(childTree.some((r) => r.kind === "call_judged" && detail(r).tool === "subagent__spawn")).toBe(false);
    expect(childTree.some((r) => r.session_id === c.unrelated)).toBe(true);
    expect((await get(`session=${c.unrelated}`)).body.audit.map((r: AuditRow) => r.code)).toEqual(["outside_scope"]);

    // decision matches the decision column or the code
    expect((await get("decision=ask")).body.audit.map((r: AuditRow) => [r.kind, detail(r).tool])).toEqual([["call_judged", "developer__read_file"]]);
    expect((await get("decision=user_proof_required")).body.audit.map((r: AuditRow) => [r.kind, r.session_id])).toEqual([["card_decision", c.root]]);
    expect((await get("decision=allow")).body.audit.map((r: AuditRow) => detail(r).tool)).toEqual(["subagent__spawn"]);

    // since: an id gives the rows after it; a time the rows at or after it
    const mid = ids[3]!;
    expect((await get(`since=${mid}&limit=1000`)).body.audit.map((r: AuditRow) => r.id)).toEqual(ids.filter((i) => i > mid));
    expect((await get(`since=${encodeURIComponent(all.at(-1)!.at)}&limit=1000`)).body.audit.length).toBe(all.length);
    expect((await get("since=2999-01-01T00:00:00Z")).body.audit).toEqual([]);
    // limit: the newest N
    expect((await get("limit=2")).body.audit.map((r: AuditRow) => r.id)).toEqual(ids.slice(0, 2));

    for (const [q, field] of [
      ["limit=0", "limit"],
      ["limit=5000", "limit"],
      ["limit=ten", "limit"],
      ["since=yesterday", "since"],
      ["decision=Allow%20Once", "decision"],
      ["colour=red", ""],
    ] as const) {
      const r = await get(q);
      expect(r.status).toBe(400);
      expect(r.body.error).toBe("bad_request");
      expect(r.body.message).toContain(`query: ${field}`);
    }
    expect(await get("session=ses_nope")).toMatchObject({ status: 404, body: { error: "session_not_found" } });
    const anon = await fetch(`${h.url}/audit`);
    expect(anon.status).toBe(401);
  });

  test("airlock audit reads the data dir: a table, --json, --export jsonl (every row, oldest first), filters, usage errors", async () => {
    h = await startGateHarness({
      config: { provider: { name: "scripted", script: "turns.yaml" }, mode: "autonomous" },
      files: { "turns.yaml": CARD_TURNS },
      workspaceFiles: { ".env": "API=1" },
    });
    const c = await answeredCard(h);
    const api = ((await (await h.api(`/audit?session=${c.child}&limit=1000`)).json()) as { audit: AuditRow[] }).audit;

    const text = await airlock(["audit", "--session", c.child], h.dataDir);
    expect(text).toMatchObject({ code: 0, stderr: "" });
    const lines = text.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^ID\s+AT\s+KIND\s+SESSION\s+TOOL\s+DECISION\s+CODE\s+BY\s+ANSWER\s+MS JUDGE\/PARKED\/RUN$/);
    expect(lines.length).toBe(api.length + 1);
    const readLine = lines.find((l) => l.includes("call_judged") && l.includes("developer__read_file"))!;
    expect(readLine).toContain("sensitive_ops");
    expect(readLine).toContain(`allow_once from ${c.root} (proof)`);
    expect(lines.find((l) => l.includes("user_proof_required"))).toContain(`refused from ${c.root} (no proof)`);

    const json = await airlock(["audit", "--session", c.child, "--json"], h.dataDir);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual({ audit: api });

    const limited = await airlock(["audit", "--decision", "ask", "--json", "--limit", "1"], h.dataDir);
    expect(JSON.parse(limited.stdout).audit.map((r: AuditRow) => detail(r).tool)).toEqual(["developer__read_file"]);

    const exp = await airlock(["audit", "--export", "jsonl"], h.dataDir);
    expect(exp).toMatchObject({ code: 0, stderr: "" });
    const exported = exp.stdout.trimEnd().split("\n").map((l) => JSON.parse(l) as AuditRow);
    const every = await h.rt.store.listAudit();
    expect(exported).toEqual(every);
    const after = await airlock(["audit", "--export", "jsonl", "--since", String(every[2]!.id)], h.dataDir);
    expect(after.stdout.trimEnd().split("\n").map((l) => (JSON.parse(l) as AuditRow).id)).toEqual(every.slice(3).map((r) => r.id));

    expect(await airlock(["audit", "--since", "yesterday"], h.dataDir)).toMatchObject({ code: 2, stdout: "" });
    expect((await airlock(["audit", "--export", "csv"], h.dataDir)).code).toBe(2);
    expect((await airlock(["audit", "--limit", "0"], h.dataDir)).code).toBe(2);
    expect(await airlock(["audit", "--session", "ses_nope"], h.dataDir)).toMatchObject({ code: 1, stderr: expect.stringContaining("session_not_found") });
  });
});
