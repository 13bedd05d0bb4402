/**
 * @module scripts/bench/rules
 * The gate's cost per call with 200 permission rules loaded against none, printed as JSON: the real
 * Gate (floor, rules, mode, elevation; no hooks), a shell call (`developer__shell`, a compound command
 * every part of which an allow rule near the end of the lists covers) and a file read
 * (`developer__read_file`), a file write an `Edit` allow rule covers (`developer__write_file`, a path not yet
 * on disk) and an MCP tool no rule names (`github__search`), each tool's `execute` a no-op so only
 * judging is measured. Target: ≤ 1.2×.
 */
import { z } from "zod";
import { Bus } from "../../src/bus/bus.ts";
import { Cards } from "../../src/card/pending.ts";
import { Config } from "../../src/config/schema.ts";
import { GateContext } from "../../src/gate/context.ts";
import { Gate } from "../../src/gate/gate.ts";
import { Permits } from "../../src/gate/permits.ts";
import { newId } from "../../src/ids.ts";
import { Inflight } from "../../src/session/inflight.ts";
import { Store } from "../../src/store/store.ts";
import { SessionRuleSets } from "../../src/gate/rules/session.ts";
import { SessionRules } from "../../src/store/session-rules.ts";
import { defineTool, type ToolDef } from "../../src/tool/tool.ts";

/** Calls per slice; slices alternate between the two gates so that a busy machine's load hits both alike. */
const SLICE = 200;
/** Slice pairs per call kind (none then loaded, loaded then none, …). */
const PAIRS = 41;

/** 200 rules: shell rules of every form in the three lists, path rules, MCP rules; the call's allow rules come last. */
function twoHundredRules(): { allow: string[]; ask: string[]; deny: string[] } {
  const allow: string[] = [];
  const ask: string[] = [];
  const deny: string[] = [];
  for (let i = 0; i < 50; i++) allow.push(`Bash(tool${i} run:*)`);
  for (let i = 0; i < 30; i++) allow.push(`Bash(make target${i} *)`);
  for (let i = 0; i < 20; i++) allow.push(`Edit(src/module${i}/**/*.ts)`);
  for (let i = 0; i < 30; i++) ask.push(`Bash(deploy${i}:*)`);
  for (let i = 0; i < 10; i++) ask.push(`mcp__server${i}`);
  for (let i = 0; i < 30; i++) deny.push(`Bash(danger${i} * --force)`);
  for (let i = 0; i < 18; i++) deny.push(`Read(./secrets${i}/**)`);
  for (let i = 0; i < 10; i++) deny.push(`mcp__server${i}__drop_table`);
  allow.push("Bash(npm run test:*)", "Bash(git status)");
  return { allow, ask, deny };
}

async function gateWith(config: Config) {
  const store = await Store.open(":memory:");
  const bus = new Bus();
  const inflight = new Inflight();
  const cards = new Cards({ store, bus, inflight, approverToken: "bench-approver-token-0123456789" });
  const shell: ToolDef = defineTool({ name: "developer__shell", description: "shell", schema: z.object({ command: z.string() }), readOnly: false, usesPermit: false, async execute() { return 0; } });
  const read: ToolDef = defineTool({ name: "developer__read_file", description: "read", schema: z.object({ path: z.string() }), readOnly: true, usesPermit: false, async execute() { return 0; } });
  const write: ToolDef = defineTool({ name: "developer__write_file", description: "write", schema: z.object({ path: z.string(), content: z.string() }), readOnly: false, usesPermit: false, async execute() { return 0; } });
  const mcp: ToolDef = defineTool({ name: "github__search", description: "mcp", schema: z.object({ q: z.string() }), readOnly: true, usesPermit: false, async execute() { return 0; } });
  const tools = new Map([shell, read, write, mcp].map((t) => [t.name, t]));
  const registry = { resolve: async (n: string) => tools.get(n), list: async () => [...tools.values()] };
  // as the runtime wires it: the rule inspector joins the tree's "Allow for this session" rules (none here)
  const gate = new Gate({ store, bus, inflight, registry, cards, permits: new Permits(64), configFor: () => config, sessionRules: new SessionRuleSets(new SessionRules(store)) });
  const s = await store.createSession({ parent_session_id: null, workspace: process.cwd(), mode: config.mode, sandbox: "workspace-write", privacy: "public", headless: true, provider: "scripted" });
  const turnId = newId("turn");
  inflight.register(s.id, turnId);
  return {
    /** µs per call over `n` calls of `name`. */
    async perCallUs(name: string, args: unknown, n = SLICE): Promise<number> {
      const t0 = performance.now();
      await GateContext.provide({ sessionId: s.id, turnId, callId: newId("call") }, async () => {
        for (let i = 0; i < n; i++) {
          const out = await gate.call({ name, args, callId: "c", fromScript: false });
          if (!out.ok) throw new Error(`bench call refused: ${out.error.code} ${out.error.message}`);
        }
      });
      return ((performance.now() - t0) * 1000) / n;
    },
    close() {
      inflight.unregister(s.id, turnId);
      cards.close();
      store.close();
    },
  };
}

const round = (x: number, d = 2) => Math.round(x * 10 ** d) / 10 ** d;
const SHELL_ARGS = { command: "npm run test -- --watch && git status" };
const READ_ARGS = { path: "README.md" };
const WRITE_ARGS = { path: "src/module7/bench/not-there.ts", content: "x" };
const MCP_ARGS = { q: "airlock" };

// the same gate and mode (autonomous: every call runs), with no rules and with 200: the rules inspector
// runs in full on every call either way (a mode's allow never short-cuts it)
const none = await gateWith(Config.parse({ mode: "autonomous" }));
const loaded = await gateWith(Config.parse({ mode: "autonomous", permissions: twoHundredRules() }));

const med = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;

/**
 * Alternating slices of {@link SLICE} calls (none, loaded; then loaded, none; …): the medians of each
 * gate's µs per call, and the median of the per-pair ratios (each pair ran back to back, under the same
 * load, so the ratio holds where absolute times drift with the machine's other work).
 */
async function compare(name: string, args: unknown): Promise<{ no_rules: number; rules_200: number; ratio: number }> {
  const a: number[] = [];
  const b: number[] = [];
  const r: number[] = [];
  await none.perCallUs(name, args);
  await loaded.perCallUs(name, args);
  for (let k = 0; k < PAIRS; k++) {
    let x: number, y: number;
    if (k % 2 === 0) {
      x = await none.perCallUs(name, args);
      y = await loaded.perCallUs(name, args);
    } else {
      y = await loaded.perCallUs(name, args);
      x = await none.perCallUs(name, args);
    }
    a.push(x);
    b.push(y);
    r.push(y / x);
  }
  return { no_rules: round(med(a)), rules_200: round(med(b)), ratio: round(med(r)) };
}

// warm up both (JIT, caches)
for (const g of [none, loaded]) await g.perCallUs("developer__shell", SHELL_ARGS, 1_000);
const shell = await compare("developer__shell", SHELL_ARGS);
const read = await compare("developer__read_file", READ_ARGS);
const write = await compare("developer__write_file", WRITE_ARGS);
const mcp = await compare("github__search", MCP_ARGS);
none.close();
loaded.close();

console.log(
  JSON.stringify(
    {
      rules_loaded: 200,
      calls_per_slice: SLICE,
      slice_pairs: PAIRS,
      gate_us_per_call: { shell, read_file: read, write_file: write, mcp_tool: mcp },
      target_ratio: 1.2,
    },
    null,
    2,
  ),
);
