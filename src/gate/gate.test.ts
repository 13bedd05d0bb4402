import { afterAll, afterEach, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { z } from "zod";
import { Inflight } from "../session/inflight.ts";
import { Cards, type Card } from "../card/pending.ts";
import { Bus, type BusEvent } from "../bus/bus.ts";
import { Config, type Mode } from "../config/schema.ts";
import { newId } from "../ids.ts";
import type { Session } from "../session/types.ts";
import { Store } from "../store/store.ts";
import { defineTool, type ToolContext, type ToolDef, type ToolOutcome } from "../tool/tool.ts";
import { GateContext } from "./context.ts";
import { Gate, NO_SURFACE_TODO, type RefusedCall } from "./gate.ts";
import { Permits } from "./permits.ts";

const FIX = path.resolve(import.meta.dir, "../../test/fixtures/hooks");
const tmp = mkdtempSync(path.join(os.tmpdir(), "airlock-gate-"));
const WS = path.join(tmp, "ws");
mkdirSync(WS, { recursive: true });
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
const APPROVER = "approver-secret-0123456789";

/** A tiny registry (the gate needs resolve/list/listCached only). */
class LocalRegistry {
  private tools = new Map<string, ToolDef>();
  register(def: ToolDef): void {
    this.tools.set(def.name, def);
  }
  async resolve(name: string): Promise<ToolDef | undefined> {
    return this.tools.get(name);
  }
  async list(): Promise<ToolDef[]> {
    return [...this.tools.values()];
  }
  listCached(): ToolDef[] {
    return [...this.tools.values()];
  }
}

interface Harness {
  store: Store;
  bus: Bus;
  inflight: Inflight;
  cards: Cards;
  permits: Permits;
  gate: Gate;
  runs: { tool: string; args: unknown; ctx: ToolContext }[];
  refused: RefusedCall[];
  session(opts?: { parent?: Session; headless?: boolean; mode?: Mode }): Promise<Session>;
  turn(s: Session): { turnId: string; controller: AbortController; end(): void };
  call(s: Session, turnId: string, name: string, args: unknown): Promise<ToolOutcome>;
  events(sessionId: string): BusEvent[];
  nextCard(sessionId: string): Promise<Card>;
}

const harnesses: Harness[] = [];
afterEach(() => {
  for (const h of harnesses.splice(0)) {
    h.cards.close();
    h.store.close();
  }
});

async function harness(cfg: Record<string, unknown> = {}, maxConcurrent = 8, leaseLive?: (turnId: string) => Promise<boolean>): Promise<Harness> {
  const store = await Store.open(":memory:");
  const bus = new Bus();
  const inflight = new Inflight();
  const cards = new Cards({ store, bus, inflight, approverToken: APPROVER });
  const permits = new Permits(maxConcurrent);
  const registry = new LocalRegistry();
  const config = Config.parse(cfg);
  const runs: Harness["runs"] = [];
  const gate = new Gate({ store, bus, inflight, registry, cards, permits, configFor: (s) => ({ ...config, mode: s.mode, sandbox: s.sandbox }), ...(leaseLive ? { leaseLive } : {}) });
  const refused: RefusedCall[] = [];
  gate.onRefused((r) => refused.push(r));
  const gates: ((ctx: ToolContext) => Promise<void>)[] = [];
  registry.register(
    defineTool({
      name: "developer__shell",
      description: "shell",
      schema: z.object({ command: z.string(), sandbox_permissions: z.string().optional(), justification: z.string().optional() }),
      readOnly: false,
      claude: { name: "Bash", input: (a) => ({ command: a.command }) },
      async execute(args, ctx) {
        runs.push({ tool: "developer__shell", args, ctx });
        const g = gates.shift();
        if (g) await g(ctx);
        return { ran: args.command, elevated: ctx.policy === ctx.session.sandbox ? null : ctx.policy, inUse: permits.inUse };
      },
    }),
  );
  registry.register(
    defineTool({
      name: "developer__list_dir",
      description: "list",
      schema: z.object({ path: z.string() }),
      readOnly: true,
      async execute(args, ctx) {
        runs.push({ tool: "developer__list_dir", args, ctx });
        return ["a", "b"];
      },
    }),
  );
  // a stand-in for code_execution__execute: runs "script" steps that call tools through ctx.invoke
  registry.register(
    defineTool({
      name: "code_execution__execute",
      description: "script",
      schema: z.object({ calls: z.array(z.object({ name: z.string(), args: z.unknown() })), keepAlive: z.boolean().optional() }),
      readOnly: true,
      usesPermit: false,
      scriptable: false,
      async execute(args, ctx) {
        runs.push({ tool: "code_execution__execute", args, ctx });
        const out: ToolOutcome[] = [];
        for (const c of args.calls) out.push(await ctx.invoke(c.name, c.args));
        if (args.keepAlive) lingering.push(() => ctx.invoke("developer__list_dir", { path: "." }));
        return { out, tools: (await ctx.listTools()).map((t) => t.name) };
      },
    }),
  );
  registry.register(
    defineTool({
      name: "code_execution__list_tools",
      description: "list tools",
      schema: z.object({}),
      readOnly: true,
      inert: true,
      usesPermit: false,
      scriptable: false,
      async execute(_a, ctx) {
        return (await ctx.listTools()).map((t) => t.name);
      },
    }),
  );
  // a stand-in for subagent__spawn: runs a child turn whose calls need permits
  registry.register(
    defineTool({
      name: "subagent__spawn",
      description: "spawn",
      schema: z.object({ command: z.string() }),
      readOnly: true,
      usesPermit: false,
      async execute(args, ctx) {
        const child = await h.session({ parent: ctx.session });
        const t = await h.turn(child);
        try {
          return await h.call(child, t.turnId, "developer__shell", { command: args.command });
        } finally {
          t.end();
        }
      },
    }),
  );
  const lingering: (() => Promise<ToolOutcome>)[] = [];
  const h: Harness & { lingering: typeof lingering; gates: typeof gates } = {
    store,
    bus,
    inflight,
    cards,
    permits,
    gate,
    runs,
    refused,
    lingering,
    gates,
    async session(opts = {}) {
      return await store.createSession({
        parent_session_id: opts.parent?.id ?? null,
        workspace: WS,
        mode: opts.mode ?? opts.parent?.mode ?? "smart",
        sandbox: "workspace-write",
        privacy: "public",
        headless: opts.headless ?? false,
        provider: "scripted",
      });
    },
    turn(s) {
      const turnId = newId("turn");
      const t = inflight.register(s.id, turnId);
      return { turnId, controller: t.controller, end: () => inflight.unregister(s.id, turnId) };
    },
    call(s, turnId, name, args) {
      const callId = newId("call");
      return GateContext.provide({ sessionId: s.id, turnId, callId }, () => gate.call({ name, args, callId, fromScript: false }));
    },
    events(sessionId) {
      return bus.since(sessionId, 0) ?? [];
    },
    nextCard(sessionId) {
      return new Promise((resolve) => {
        const off = bus.subscribe(sessionId, (ev) => {
          if (ev.type === "action_required") {
            off();
            resolve(ev.data as Card);
          }
        });
      });
    },
  };
  harnesses.push(h);
  return h;
}

type H = Awaited<ReturnType<typeof harness>> & { lingering: (() => Promise<ToolOutcome>)[]; gates: ((ctx: ToolContext) => Promise<void>)[] };

describe("Gate: calling context (fail closed)", () => {
  test("no calling context → gate_no_session, nothing runs", async () => {
    const h = await harness();
    const out = await h.gate.call({ name: "developer__list_dir", args: { path: "." }, callId: "c1", fromScript: false });
    expect(out).toMatchObject({ ok: false, error: { code: "gate_no_session" } });
    expect(h.runs).toEqual([]);
  });

  test("a session whose turn ended → gate_no_session", async () => {
    const h = await harness();
    const s = await h.session({ mode: "autonomous" });
    const t = await h.turn(s);
    t.end();
    expect(await h.call(s, t.turnId, "developer__list_dir", { path: "." })).toMatchObject({ ok: false, error: { code: "gate_no_session" } });
    expect(h.runs).toEqual([]);
  });

  test("a script call arriving after its turn ended (a promise kept alive) is refused gate_no_session", async () => {
    const h = (await harness()) as H;
    const s = await h.session({ mode: "autonomous" });
    const t = await h.turn(s);
    const out = await h.call(s, t.turnId, "code_execution__execute", { calls: [], keepAlive: true });
    expect(out.ok).toBe(true);
    t.end();
    const late = await h.lingering[0]!();
    expect(late).toMatchObject({ ok: false, error: { code: "gate_no_session" } });
    expect(h.runs.map((r) => r.tool)).toEqual(["code_execution__execute"]);
  });
});

describe("Gate: validation and inspectors", () => {
  test("unknown tool and invalid arguments are refused naming the problem", async () => {
    const h = await harness();
    const s = await h.session({ mode: "autonomous" });
    const t = await h.turn(s);
    expect(await h.call(s, t.turnId, "developer__nope", {})).toMatchObject({ ok: false, error: { code: "unknown_tool" } });
    const bad = await h.call(s, t.turnId, "developer__shell", { command: 5 });
    expect(bad).toMatchObject({ ok: false, error: { code: "invalid_arguments" } });
    expect((bad as { error: { message: string } }).error.message).toContain("command");
  });

  test("a deny nobody gave (the terminal's input ended) says nobody could answer; a person's deny says a person denied it, with the reason", async () => {
    const h = await harness();
    const s = await h.session({ mode: "autonomous" });
    const t = await h.turn(s);
    const messages: string[] = [];
    for (const from of [
      { sessionId: s.id, actor: "terminal", reason: "stdin_closed: the terminal's input ended", nobody: true },
      { sessionId: s.id, actor: "terminal", reason: "use ls" },
    ]) {
      const card = h.nextCard(s.id);
      const p = h.call(s, t.turnId, "developer__shell", { command: "rm -rf /" });
      const c = await card;
      expect(await h.cards.resolve(c.request_id, "deny", from)).toMatchObject({ ok: true, outcome: { decision: "deny", ...(from.nobody ? { nobody: true } : {}) } });
      const r = await p;
      expect(r).toMatchObject({ ok: false, error: { code: "denied" } });
      messages.push((r as { error: { message: string } }).error.message);
    }
    expect(messages[0]).toContain("nobody could answer the approval request for this call (stdin_closed: the terminal's input ended)");
    expect(messages[0]).not.toContain("a person denied");
    expect(messages[1]).toContain("a person denied this call: use ls");
    expect(h.runs.length).toBe(0);
  });

  test("autonomous runs state-changing calls; the floor still asks with user proof", async () => {
    const h = await harness();
    const s = await h.session({ mode: "autonomous" });
    const t = await h.turn(s);
    expect(await h.call(s, t.turnId, "developer__shell", { command: "echo hi > out.txt" })).toMatchObject({ ok: true });
    const card = h.nextCard(s.id);
    const p = h.call(s, t.turnId, "developer__shell", { command: "rm -rf /" });
    const c = await card;
    expect(c).toMatchObject({ inspector: "sensitive_ops", requires_user_proof: true, tool: "developer__shell", user_only: true });
    await h.cards.resolve(c.request_id, "deny", { sessionId: s.id });
    expect(await p).toMatchObject({ ok: false, error: { code: "denied" } });
    expect(h.runs.length).toBe(1);
  });

  test("smart allows read-only calls and asks for state changes; chat refuses everything", async () => {
    const h = await harness();
    const s = await h.session({ mode: "smart" });
    const t = await h.turn(s);
    expect(await h.call(s, t.turnId, "developer__list_dir", { path: "." })).toMatchObject({ ok: true });
    const card = h.nextCard(s.id);
    const p = h.call(s, t.turnId, "developer__shell", { command: "ls" });
    expect(await card).toMatchObject({ inspector: "mode", requires_user_proof: false });
    const chat = await h.session({ mode: "chat" });
    const ct = await h.turn(chat);
    expect(await h.call(chat, ct.turnId, "developer__list_dir", { path: "." })).toMatchObject({ ok: false, error: { code: "mode_chat" } });
    t.end();
    expect(await p).toMatchObject({ ok: false, error: { code: "cancelled" } });
  });

  test("approve asks for every call but code_execution__list_tools", async () => {
    const h = await harness();
    const s = await h.session({ mode: "approve" });
    const t = await h.turn(s);
    expect(await h.call(s, t.turnId, "code_execution__list_tools", {})).toMatchObject({ ok: true });
    const card = h.nextCard(s.id);
    const p = h.call(s, t.turnId, "developer__list_dir", { path: "." });
    const c = await card;
    expect(c.inspector).toBe("mode");
    await h.cards.resolve(c.request_id, "allow_once", { sessionId: s.id });
    expect(await p).toMatchObject({ ok: true });
  });

  test("fleet: an allowed call whose turn lost its lease meanwhile is refused lease_lost and does not run", async () => {
    let live = true;
    const h = await harness({}, 8, async () => live);
    const s = await h.session({ mode: "approve" });
    const t = await h.turn(s);
    const card = h.nextCard(s.id);
    const p = h.call(s, t.turnId, "developer__list_dir", { path: "." });
    const c = await card;
    live = false; // the lease expired (or was taken over) while the card waited
    await h.cards.resolve(c.request_id, "allow_once", { sessionId: s.id });
    expect(await p).toMatchObject({ ok: false, error: { code: "lease_lost" } });
    expect(h.runs).toEqual([]);
    t.end();
  });

  test("per-tool config: deny refuses, ask asks even in autonomous", async () => {
    const h = await harness({ tools: { developer__list_dir: { permission: "deny" }, developer__shell: { permission: "ask" } } });
    const s = await h.session({ mode: "autonomous" });
    const t = await h.turn(s);
    expect(await h.call(s, t.turnId, "developer__list_dir", { path: "." })).toMatchObject({ ok: false, error: { code: "denied", inspector: "tool_config" } });
    const card = h.nextCard(s.id);
    void h.call(s, t.turnId, "developer__shell", { command: "ls" });
    expect(await card).toMatchObject({ inspector: "tool_config" });
    t.end();
  });

  test("script calls are judged one by one with the same floor", async () => {
    const h = await harness();
    const s = await h.session({ mode: "autonomous" });
    const t = await h.turn(s);
    const card = h.nextCard(s.id);
    const p = h.call(s, t.turnId, "code_execution__execute", {
      calls: [
        { name: "developer__list_dir", args: { path: "." } },
        { name: "developer__shell", args: { command: ["cat", "~/.ssh/" + "id_rsa"].join(" ") } },
        { name: "code_execution__execute", args: { calls: [] } },
      ],
    });
    const c = await card;
    expect(c).toMatchObject({ inspector: "sensitive_ops", arguments: { command: "cat ~/.ssh/id_rsa" } });
    await h.cards.resolve(c.request_id, "deny", { sessionId: s.id });
    const out = (await p) as { ok: true; result: { out: ToolOutcome[]; tools: string[] } };
    expect(out.result.out.map((o) => (o.ok ? "ok" : o.error.code))).toEqual(["ok", "denied", "unknown_tool"]);
    expect(out.result.tools).toEqual(["developer__shell", "developer__list_dir", "subagent__spawn"]);
    const reqs = h.events(s.id).filter((e) => e.type === "tool_request").map((e) => e.data.from_script);
    expect(reqs).toEqual([false, true, true, true]);
  });
});

describe("Gate: cards across the session tree", () => {
  test("a grandchild's script ask reaches the root with the same id and args, and runs once after the root allows", async () => {
    const h = await harness();
    const root = await h.session({ mode: "smart" });
    const child = await h.session({ parent: root });
    const grand = await h.session({ parent: child });
    const sibling = await h.session({ parent: root });
    const unrelated = await h.session();
    const rt = await h.turn(root);
    const gt = await h.turn(grand);
    const atRoot = h.nextCard(root.id);
    const atHome = h.nextCard(grand.id);
    const p = h.call(grand, gt.turnId, "code_execution__execute", { calls: [{ name: "developer__shell", args: { command: "touch made.txt" } }] });
    const [r, g] = await Promise.all([atRoot, atHome]);
    expect(r).toEqual({ ...g, surfaced_in: root.id });
    expect(g.surfaced_in).toBe(grand.id);
    expect(r.arguments).toEqual({ command: "touch made.txt" });
    // the middle session is not a surface: the scope widens by exactly one session
    expect(h.events(child.id).filter((e) => e.type === "action_required")).toEqual([]);
    expect(h.cards.listForSession(child.id)).toEqual([]);
    for (const who of [child, sibling, unrelated]) {
      const res = await h.cards.resolve(r.request_id, "allow_once", { sessionId: who.id });
      expect(res).toMatchObject({ ok: false, error: { code: "outside_scope" } });
    }
    expect(h.cards.get(r.request_id)).toBeDefined();
    expect(h.cards.listForSession(root.id).map((c) => c.request_id)).toEqual([r.request_id]);
    expect(h.cards.listForSession(grand.id).map((c) => c.surfaced_in)).toEqual([grand.id]);
    expect(await h.cards.resolve(r.request_id, "allow_once", { sessionId: root.id })).toMatchObject({ ok: true });
    expect(await h.cards.resolve(r.request_id, "deny", { sessionId: root.id })).toMatchObject({ ok: false, error: { code: "already_decided" } });
    expect(await p).toMatchObject({ ok: true });
    expect(h.runs.filter((x) => x.tool === "developer__shell").length).toBe(1);
    expect(h.cards.listForSession(root.id)).toEqual([]);
    const resolved = h.events(root.id).filter((e) => e.type === "action_resolved");
    expect(resolved.map((e) => e.data)).toEqual([{ request_id: r.request_id, decision: "allow_once", decided_in: root.id }]);
    const audit = await h.store.listAudit({ request_id: r.request_id });
    expect(audit.filter((a) => a.outcome === "refused").map((a) => [a.session_id, a.code])).toEqual([
      [child.id, "outside_scope"],
      [sibling.id, "outside_scope"],
      [unrelated.id, "outside_scope"],
      [root.id, "already_decided"],
    ]);
    expect(audit.filter((a) => a.outcome === "accepted").map((a) => a.session_id)).toEqual([root.id]);
    rt.end();
    gt.end();
  });

  test("a root's own ask is published once, to itself", async () => {
    const h = await harness();
    const root = await h.session();
    const t = await h.turn(root);
    const card = h.nextCard(root.id);
    void h.call(root, t.turnId, "developer__shell", { command: "ls" });
    const c = await card;
    expect(h.events(root.id).filter((e) => e.type === "action_required").length).toBe(1);
    expect(c.surfaced_in).toBe(root.id);
    t.end();
  });

  test("an unproven allow is refused at the surface exactly as at home; the token allows; deny needs none", async () => {
    const h = await harness();
    const root = await h.session({ mode: "autonomous" });
    const child = await h.session({ parent: root });
    const t = await h.turn(child);
    const card = h.nextCard(root.id);
    const p = h.call(child, t.turnId, "developer__shell", { command: "echo x >> ~/.bashrc" });
    const c = await card;
    expect(c.requires_user_proof).toBe(true);
    const atHome = await h.cards.resolve(c.request_id, "allow_once", { sessionId: child.id });
    const atRoot = await h.cards.resolve(c.request_id, "allow_once", { sessionId: root.id });
    expect(atHome).toMatchObject({ ok: false, error: { code: "user_proof_required" } });
    expect(atRoot).toMatchObject({ ok: false, error: { code: "user_proof_required" } });
    const m1 = (atHome as { error: Error }).error.message;
    const m2 = (atRoot as { error: Error }).error.message;
    expect(m1).toBe(m2);
    expect(m1).toContain("X-Airlock-Approver");
    // a wrong token: its own code, alike at home and at the surface
    const wrongAtHome = await h.cards.resolve(c.request_id, "allow_once", { sessionId: child.id, approverToken: "wrong" });
    const wrongAtRoot = await h.cards.resolve(c.request_id, "allow_once", { sessionId: root.id, approverToken: "wrong" });
    expect(wrongAtHome).toMatchObject({ ok: false, error: { code: "user_proof_invalid" } });
    expect((wrongAtRoot as { error: Error }).error.message).toBe((wrongAtHome as { error: Error }).error.message);
    expect(await h.cards.resolve(c.request_id, "allow_once", { sessionId: root.id, approverToken: APPROVER })).toMatchObject({ ok: true });
    expect(await p).toMatchObject({ ok: true });

    const card2 = h.nextCard(child.id);
    const p2 = h.call(child, t.turnId, "developer__shell", { command: "rm -rf ~" });
    const c2 = await card2;
    expect(await h.cards.resolve(c2.request_id, "deny", { sessionId: child.id })).toMatchObject({ ok: true });
    expect(await p2).toMatchObject({ ok: false, error: { code: "denied" } });
    t.end();
  });

  test("unknown ids answer not_found; expired cards answer expired", async () => {
    const h = await harness({ approvals: { ttl_seconds: 1 } });
    const s = await h.session();
    const t = await h.turn(s);
    expect(await h.cards.resolve("act_nope", "deny", { sessionId: s.id })).toMatchObject({ ok: false, error: { code: "not_found" } });
    const card = h.nextCard(s.id);
    const p = h.call(s, t.turnId, "developer__shell", { command: "ls" });
    const c = await card;
    expect(await p).toMatchObject({ ok: false, error: { code: "expired" } });
    expect(await h.cards.resolve(c.request_id, "allow_once", { sessionId: s.id })).toMatchObject({ ok: false, error: { code: "expired" } });
    expect(h.events(s.id).find((e) => e.type === "action_resolved")?.data).toEqual({ request_id: c.request_id, decision: "expired" });
    expect(h.runs).toEqual([]);
    t.end();
  });

  test("cancelling a turn while parked withdraws its card and leaks no permit", async () => {
    const h = await harness({}, 1);
    const root = await h.session();
    const child = await h.session({ parent: root });
    const t = await h.turn(child);
    const card = h.nextCard(root.id);
    const p = h.call(child, t.turnId, "developer__shell", { command: "ls" });
    const c = await card;
    expect(h.permits.inUse).toBe(0);
    h.inflight.cancel(child.id);
    expect(await p).toMatchObject({ ok: false, error: { code: "cancelled" } });
    t.end();
    for (const sid of [root.id, child.id]) {
      expect(h.events(sid).filter((e) => e.type === "action_resolved").map((e) => e.data)).toEqual([{ request_id: c.request_id, decision: "cancelled" }]);
      expect(h.cards.listForSession(sid)).toEqual([]);
    }
    expect(h.permits.inUse).toBe(0);
    expect(await h.cards.resolve(c.request_id, "allow_once", { sessionId: root.id })).toMatchObject({ ok: false, error: { code: "already_decided" } });
  });
});

describe("Gate: headless", () => {
  test("a headless session and every descendant refuse an ask at once with no_human_surface; nothing is parked", async () => {
    const h = await harness();
    const root = await h.session({ headless: true });
    const child = await h.session({ parent: root, headless: false }); // the row says interactive; the chain says headless
    for (const s of [root, child]) {
      const t = await h.turn(s);
      const out = await h.call(s, t.turnId, "developer__shell", { command: "touch x" });
      expect(out).toMatchObject({ ok: false, error: { code: "no_human_surface", inspector: "mode" } });
      expect((out as { error: { message: string } }).error.message).toContain("smart mode asks");
      // and what to do about it
      expect((out as { error: { message: string } }).error.message).toEndWith(`; ${NO_SURFACE_TODO}`);
      t.end();
    }
    expect(h.cards.size).toBe(0);
    for (const s of [root, child]) expect(h.events(s.id).filter((e) => e.type === "action_required")).toEqual([]);
    expect(h.refused.map((r) => r.code)).toEqual(["no_human_surface", "no_human_surface"]);
    expect(h.runs).toEqual([]);
  });

  test("once a root's surface is gone (surfaceGone), its tree refuses an ask at once with no_human_surface; another root still parks", async () => {
    const h = await harness();
    const root = await h.session();
    const child = await h.session({ parent: root });
    const other = await h.session();
    h.gate.surfaceGone(root.id);
    for (const s of [root, child]) {
      const t = await h.turn(s);
      const out = await h.call(s, t.turnId, "developer__shell", { command: "touch x" });
      expect(out).toMatchObject({ ok: false, error: { code: "no_human_surface", inspector: "mode" } });
      expect((out as { error: { message: string } }).error.message).toContain("no person can answer any more");
      t.end();
    }
    expect(h.cards.size).toBe(0);
    const t = await h.turn(other);
    const card = h.nextCard(other.id);
    const p = h.call(other, t.turnId, "developer__shell", { command: "touch y" });
    const c = await card;
    await h.cards.resolve(c.request_id, "deny", { sessionId: other.id });
    expect(await p).toMatchObject({ ok: false, error: { code: "denied" } });
    t.end();
    expect((await h.store.getSession(root.id))?.headless).toBe(false); // the stored flag is not changed
  });
});

describe("Gate: permits", () => {
  test("with one permit, two parked calls do not stop a third session's call", async () => {
    const h = await harness({}, 1);
    const a = await h.session();
    const b = await h.session();
    const c = await h.session({ mode: "autonomous" });
    const [ta, tb, tc] = [await h.turn(a), await h.turn(b), await h.turn(c)];
    const cards = Promise.all([h.nextCard(a.id), h.nextCard(b.id)]);
    const pa = h.call(a, ta.turnId, "developer__shell", { command: "touch a" });
    const pb = h.call(b, tb.turnId, "developer__shell", { command: "touch b" });
    const [ca, cb] = await cards;
    expect(await h.call(c, tc.turnId, "developer__shell", { command: "touch c" })).toMatchObject({ ok: true, result: { inUse: 1 } });
    await h.cards.resolve(ca.request_id, "allow_once", { sessionId: a.id });
    await h.cards.resolve(cb.request_id, "allow_once", { sessionId: b.id });
    expect((await Promise.all([pa, pb])).map((o) => o.ok)).toEqual([true, true]);
    expect(h.permits.inUse).toBe(0);
  });

  test("a parent blocked on a child whose call needs the only permit completes", async () => {
    const h = await harness({}, 1);
    const parent = await h.session({ mode: "autonomous" });
    const t = await h.turn(parent);
    const out = await h.call(parent, t.turnId, "subagent__spawn", { command: "touch from-child" });
    expect(out).toMatchObject({ ok: true, result: { ok: true, result: { ran: "touch from-child", inUse: 1 } } });
    expect(h.permits.inUse).toBe(0);
  });
});

describe("Gate: hooks", () => {
  const hookCfg = (command: string, timeout = 10) => ({ hooks: { PreToolUse: [{ matcher: "Bash", hooks: [{ type: "command", command, timeout }] }] } });
  const failing: [string, string, number, string][] = [
    ["exits 2 silently", `${FIX}/exit2-silent.sh`, 10, "denied"],
    ["sleeps past its timeout", `${FIX}/sleep-forever.sh ${path.join(tmp, "pid")}`, 0.3, "hook_timeout"],
    ["cannot start", `${FIX}/no-such-hook.sh`, 10, "hook_error"],
    ["prints permissionDecision alow", `${FIX}/bad-decision.sh`, 10, "hook_output_invalid"],
  ];
  test.each(failing)("a hook that %s leaves the tool un-run (headless: refused with its code)", async (_n, command, timeout, code) => {
    const h = await harness(hookCfg(command, timeout));
    const s = await h.session({ mode: "autonomous", headless: true });
    const t = await h.turn(s);
    const out = await h.call(s, t.turnId, "developer__shell", { command: "ls" });
    expect(out).toMatchObject({ ok: false, error: { code, inspector: "hook" } });
    // a hook's own failure says its own: no "run it attended" advice
    expect((out as { error: { message: string } }).error.message).not.toContain(NO_SURFACE_TODO);
    expect(h.runs).toEqual([]);
    t.end();
  });

  test.each(failing.filter((f) => f[3] !== "denied"))("a hook that %s is an ask where a person can answer, never an allow", async (_n, command, timeout) => {
    const h = await harness(hookCfg(command, timeout));
    const s = await h.session({ mode: "autonomous" });
    const t = await h.turn(s);
    const card = h.nextCard(s.id);
    const p = h.call(s, t.turnId, "developer__shell", { command: "ls" });
    const c = await card;
    expect(c.inspector).toBe("hook");
    expect(h.runs).toEqual([]);
    await h.cards.resolve(c.request_id, "deny", { sessionId: s.id });
    expect(await p).toMatchObject({ ok: false, error: { code: "denied" } });
    expect(h.runs).toEqual([]);
    t.end();
  });

  test("hooks run for script calls of a subagent too, and a hook allow does not loosen the floor", async () => {
    const h = await harness({ hooks: { PreToolUse: [{ matcher: "developer__shell", hooks: [{ type: "command", command: `${FIX}/allow.sh`, timeout: 10 }] }] } });
    const root = await h.session({ mode: "autonomous" });
    const child = await h.session({ parent: root });
    const t = await h.turn(child);
    expect(await h.call(child, t.turnId, "code_execution__execute", { calls: [{ name: "developer__shell", args: { command: "ls" } }] })).toMatchObject({ ok: true });
    const card = h.nextCard(root.id);
    void h.call(child, t.turnId, "code_execution__execute", { calls: [{ name: "developer__shell", args: { command: "rm -rf /" } }] });
    expect(await card).toMatchObject({ inspector: "sensitive_ops" });
    t.end();
  });
});

describe("Gate: elevation", () => {
  test("an invalid request is refused with its code; a valid one asks with user proof and applies to that call only", async () => {
    const h = await harness();
    const s = await h.session({ mode: "autonomous" });
    const t = await h.turn(s);
    expect(await h.call(s, t.turnId, "developer__shell", { command: "ls", sandbox_permissions: "danger-full-access" })).toMatchObject({
      ok: false,
      error: { code: "elevation_missing_justification" },
    });
    expect(await h.call(s, t.turnId, "developer__shell", { command: "ls", sandbox_permissions: "read-only", justification: "x" })).toMatchObject({
      ok: false,
      error: { code: "elevation_not_wider" },
    });
    expect(await h.call(s, t.turnId, "developer__shell", { command: "ls", sandbox_permissions: "root", justification: "x" })).toMatchObject({
      ok: false,
      error: { code: "elevation_invalid" },
    });
    // the gate resolves the policy once: a refused elevation never reaches the tool
    expect(h.runs).toEqual([]);
    const card = h.nextCard(s.id);
    const p = h.call(s, t.turnId, "developer__shell", { command: "ls", sandbox_permissions: "danger-full-access", justification: "needs the network" });
    const c = await card;
    expect(c).toMatchObject({ inspector: "elevation", requires_user_proof: true });
    expect(await h.cards.resolve(c.request_id, "allow_once", { sessionId: s.id, approverToken: APPROVER })).toMatchObject({ ok: true });
    expect(await p).toMatchObject({ ok: true, result: { elevated: "danger-full-access" } });
    expect(await h.call(s, t.turnId, "developer__shell", { command: "ls" })).toMatchObject({ ok: true, result: { elevated: null } });
    const hs = await h.session({ mode: "autonomous", headless: true });
    const ht = await h.turn(hs);
    expect(await h.call(hs, ht.turnId, "developer__shell", { command: "ls", sandbox_permissions: "danger-full-access", justification: "x" })).toMatchObject({
      ok: false,
      error: { code: "no_human_surface", inspector: "elevation" },
    });
    t.end();
  });
});
