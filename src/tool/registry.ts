/**
 * @module tool/registry
 * The roster of tools: static tools registered at start (host tools, code execution, subagents) and
 * dynamic sources listed on demand (an MCP server `fs` is a source with prefix `fs__`).
 * The gate resolves names here; the loop and `code_execution__list_tools` read specs from here.
 */
import type { ToolOffer } from "../config/schema.ts";
import { AirlockError, assertNever } from "../errors.ts";
import { toolSpec, type ToolDef, type ToolSpec } from "./tool.ts";

/** A dynamic group of tools sharing a name prefix (e.g. an MCP server). `list()` may be slow (start-up). */
export interface ToolSource {
  /** Every tool of this source is named `${prefix}…`, e.g. `fs__`. */
  prefix: string;
  list(): Promise<ToolDef[]>;
  /**
   * Why the source could not list its tools the last time (e.g. its MCP server failed to start), as the
   * error a call to one of its tools should fail with; undefined when the last listing succeeded.
   */
  unavailable?(): AirlockError | undefined;
  /** Releases the source's resources (processes); called by the runtime on close. */
  close?(): Promise<void> | void;
}

/** Tool names are `extension__tool` (SPEC §1). */
const TOOL_NAME = /^[a-zA-Z0-9][a-zA-Z0-9_-]*__[a-zA-Z0-9_.-]+$/;

export class ToolRegistry {
  private tools = new Map<string, ToolDef>();
  private sources: ToolSource[] = [];
  /** Last successful listing of each source (by prefix), for synchronous readers. */
  private cached = new Map<string, ToolDef[]>();
  private specCache = new WeakMap<ToolDef, ToolSpec>();

  /** Registers a static tool. Throws `internal` for a malformed or duplicate name, or one under a source's prefix (a bug, not a user error). */
  register(def: ToolDef): void {
    if (!TOOL_NAME.test(def.name)) throw new AirlockError("internal", `tool name ${JSON.stringify(def.name)} is not of the form extension__tool`);
    if (this.tools.has(def.name)) throw new AirlockError("internal", `tool ${def.name} is registered twice`);
    const source = this.sources.find((s) => def.name.startsWith(s.prefix));
    if (source) throw new AirlockError("internal", `tool ${def.name} falls under the prefix of the tool source ${source.prefix}`);
    this.tools.set(def.name, def);
  }

  /** Registers a dynamic source; its tools must all start with `source.prefix`. @throws AirlockError `config_invalid` when a static (built-in) tool already uses that prefix. */
  registerSource(source: ToolSource): void {
    if (this.sources.some((s) => s.prefix === source.prefix)) throw new AirlockError("internal", `tool source ${source.prefix} is registered twice`);
    // a source under a built-in's prefix would make its tools pass for built-in ones (config/schema.ts refuses such names first)
    const shadowed = [...this.tools.keys()].find((n) => n.startsWith(source.prefix));
    if (shadowed) throw new AirlockError("config_invalid", `tool source ${source.prefix} shares its prefix with the built-in tool ${shadowed}; rename the MCP server`);
    this.sources.push(source);
  }

  /** A static tool by name (sync), or a source tool from the last listing; undefined when unknown. */
  get(name: string): ToolDef | undefined {
    const t = this.tools.get(name);
    if (t) return t;
    for (const [prefix, defs] of this.cached) if (name.startsWith(prefix)) return defs.find((d) => d.name === name);
    return undefined;
  }

  /**
   * A tool by name, listing the matching dynamic source when needed (this starts an MCP server).
   * Undefined when no tool has that name.
   * @throws AirlockError the source's `unavailable()` error (`mcp_server_unavailable`) when the name is under
   * a source's prefix, is not in its last-known tools, and the source's last listing failed — the call
   * fails with why the server is down, not as an unknown tool.
   */
  async resolve(name: string): Promise<ToolDef | undefined> {
    const t = this.tools.get(name);
    if (t) return t;
    const source = this.sources.find((s) => name.startsWith(s.prefix));
    if (!source) return undefined;
    const defs = await this.listSource(source);
    const def = defs.find((d) => d.name === name);
    if (def) return def;
    const down = source.unavailable?.();
    if (down) throw down;
    return undefined;
  }

  /** True when `name` falls under a registered source's prefix (`fs__anything` when `fs__` is a source). */
  hasSourceFor(name: string): boolean {
    return this.sources.some((s) => name.startsWith(s.prefix));
  }

  /** Every tool: static ones in registration order, then each source's (sources that fail to list are skipped, with a warning on stderr). */
  async list(): Promise<ToolDef[]> {
    const out = [...this.tools.values()];
    const lists = await Promise.all(this.sources.map((s) => this.listSource(s)));
    for (const l of lists) out.push(...l);
    return out;
  }

  /** Like `list()` but synchronous: static tools plus each source's last successful listing. */
  listCached(): ToolDef[] {
    const out = [...this.tools.values()];
    for (const s of this.sources) out.push(...(this.cached.get(s.prefix) ?? []));
    return out;
  }

  /**
   * Specs (name, description, JSON Schema) of every tool passing `filter`. With `sources: false`
   * only static tools are considered and no source is listed (no MCP server starts): the model's
   * roster (`code_execution__*`, `subagent__*`) holds no source tool, so listing them would only
   * start servers nobody uses (and stall every model call on a server that cannot start).
   */
  async specs(filter?: (def: ToolDef) => boolean, opts: { sources?: boolean } = {}): Promise<ToolSpec[]> {
    const defs = opts.sources === false ? [...this.tools.values()] : await this.list();
    return defs.filter((d) => !filter || filter(d)).map((d) => this.spec(d));
  }

  /** Synchronous `specs` over `listCached()` (what a script's `listTools()` sees). */
  specsCached(filter?: (def: ToolDef) => boolean): ToolSpec[] {
    return this.listCached()
      .filter((d) => !filter || filter(d))
      .map((d) => this.spec(d));
  }

  /** The spec of one tool, computed once per definition. */
  spec(def: ToolDef): ToolSpec {
    let s = this.specCache.get(def);
    if (!s) {
      s = toolSpec(def);
      this.specCache.set(def, s);
    }
    return s;
  }

  /**
   * Why `name` cannot name a tool of this registry, for checking the keys of `config.tools` at start:
   * undefined when it is a static tool or falls under a source's prefix (an MCP server's tools are
   * not known before it is listed, so any `server__x` is accepted); otherwise one sentence saying
   * what is wrong, with the closest tool name as a suggestion when one is near (`developer__shel` →
   * `developer__shell`; Claude Code's `Bash` → `developer__shell`).
   */
  checkToolName(name: string): string | undefined {
    if (this.tools.has(name) || this.hasSourceFor(name)) return undefined;
    const statics = [...this.tools.values()];
    const extensions = [...new Set(statics.map((d) => d.name.slice(0, d.name.indexOf("__"))))];
    const servers = this.sources.map((s) => s.prefix.slice(0, -2));
    const sep = name.indexOf("__");
    const alias = statics.find((d) => d.claude?.name.toLowerCase() === name.toLowerCase());
    const underServers = sep > 0 ? this.sources.map((s) => s.prefix + name.slice(sep + 2)) : [];
    const suggestion = alias ? alias.name : closest(name, [...statics.map((d) => d.name), ...underServers]);
    const hint = suggestion ? `did you mean ${suggestion}? ` : "";
    if (sep <= 0) {
      return `not an airlock tool name (extension__tool); ${hint}per-tool permissions use airlock's names, e.g. developer__shell, not Claude Code's`;
    }
    const ext = name.slice(0, sep);
    if (extensions.includes(ext)) {
      const same = statics.filter((d) => d.name.startsWith(`${ext}__`)).map((d) => d.name);
      return `no such tool; ${hint}the ${ext}__ tools are ${same.join(", ")}`;
    }
    const known = `built-in extensions: ${extensions.join(", ")}; MCP servers under mcp_servers: ${servers.length ? servers.join(", ") : "none"}`;
    return `no such tool; ${hint}"${ext}" is neither a built-in extension nor a configured MCP server (${known})`;
  }

  /** Closes every source that has a `close` (MCP server processes). Errors are reported on stderr, not thrown. */
  async close(): Promise<void> {
    await Promise.all(
      this.sources.map(async (s) => {
        try {
          await s.close?.();
        } catch (e) {
          console.error(`airlock: closing tool source ${s.prefix} failed:`, e);
        }
      }),
    );
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  private async listSource(source: ToolSource): Promise<ToolDef[]> {
    try {
      const defs = (await source.list()).filter((d) => d.name.startsWith(source.prefix));
      this.cached.set(source.prefix, defs);
      return defs;
    } catch (e) {
      console.error(`airlock: tool source ${source.prefix} is unavailable: ${(e as Error).message}`);
      return this.cached.get(source.prefix) ?? [];
    }
  }
}

/** The roster offered to the model by default (SPEC §4): `code_execution__*` plus `subagent__*`. */
export function isModelRosterTool(def: ToolDef): boolean {
  return def.name.startsWith("code_execution__") || def.name.startsWith("subagent__");
}

/**
 * The filter of the roster offered to the model for `tools.offer` (SPEC §4): `code` → {@link isModelRosterTool};
 * `direct` → every tool but `code_execution__*` (the shell, file tools, interpreters, subagents, MCP tools,
 * each with its own schema); `both` → every tool. What is offered changes nothing in how a call is judged.
 */
export function offeredToolFilter(offer: ToolOffer): (def: ToolDef) => boolean {
  switch (offer) {
    case "code":
      return isModelRosterTool;
    case "direct":
      return (def) => !def.name.startsWith("code_execution__");
    case "both":
      return () => true;
    default:
      return assertNever(offer, "tools.offer");
  }
}

/** What a script may call: every tool except `code_execution__*` and those marked `scriptable: false`. */
export function isScriptableTool(def: ToolDef): boolean {
  return !def.name.startsWith("code_execution__") && def.scriptable !== false;
}

/**
 * The candidate nearest to `name` by edit distance, when near enough to be a typo: at most a third of
 * the length of the tool part (after `__`), and at least 2 (`shel` → `shell`, not `ruby` → `js`).
 */
function closest(name: string, candidates: string[]): string | undefined {
  let best: string | undefined;
  const part = name.includes("__") ? name.slice(name.indexOf("__") + 2) : name;
  let bestD = Math.max(2, Math.floor(part.length / 3)) + 1;
  for (const c of candidates) {
    const d = editDistance(name.toLowerCase(), c.toLowerCase());
    if (d < bestD) {
      best = c;
      bestD = d;
    }
  }
  return best;
}

/** Levenshtein distance (insertions, deletions, substitutions each cost 1). */
function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) cur[j] = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    prev = cur;
  }
  return prev[b.length]!;
}
