/**
 * @module tool/registry
 * The roster of tools: static tools registered at start (host tools, code execution, subagents) and
 * dynamic sources listed on demand (an MCP server `fs` is a source with prefix `fs__`).
 * The gate resolves names here; the loop and `code_execution__list_tools` read specs from here.
 */
import { AirlockError } from "../errors.ts";
import { toolSpec, type ToolDef, type ToolSpec } from "./tool.ts";

/** A dynamic group of tools sharing a name prefix (e.g. an MCP server). `list()` may be slow (start-up). */
export interface ToolSource {
  /** Every tool of this source is named `${prefix}…`, e.g. `fs__`. */
  prefix: string;
  list(): Promise<ToolDef[]>;
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

  /** Registers a static tool. Throws `internal` for a malformed or duplicate name (a bug, not a user error). */
  register(def: ToolDef): void {
    if (!TOOL_NAME.test(def.name)) throw new AirlockError("internal", `tool name ${JSON.stringify(def.name)} is not of the form extension__tool`);
    if (this.tools.has(def.name)) throw new AirlockError("internal", `tool ${def.name} is registered twice`);
    this.tools.set(def.name, def);
  }

  /** Registers a dynamic source; its tools must all start with `source.prefix`. */
  registerSource(source: ToolSource): void {
    if (this.sources.some((s) => s.prefix === source.prefix)) throw new AirlockError("internal", `tool source ${source.prefix} is registered twice`);
    this.sources.push(source);
  }

  /** A static tool by name (sync), or a source tool from the last listing; undefined when unknown. */
  get(name: string): ToolDef | undefined {
    const t = this.tools.get(name);
    if (t) return t;
    for (const [prefix, defs] of this.cached) if (name.startsWith(prefix)) return defs.find((d) => d.name === name);
    return undefined;
  }

  /** A tool by name, listing the matching dynamic source when needed. A source that fails to list yields undefined. */
  async resolve(name: string): Promise<ToolDef | undefined> {
    const t = this.tools.get(name);
    if (t) return t;
    const source = this.sources.find((s) => name.startsWith(s.prefix));
    if (!source) return undefined;
    const defs = await this.listSource(source);
    return defs.find((d) => d.name === name);
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

  /** Specs (name, description, JSON Schema) of every tool passing `filter`. */
  async specs(filter?: (def: ToolDef) => boolean): Promise<ToolSpec[]> {
    const defs = await this.list();
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

/** What a script may call: every tool except `code_execution__*` and those marked `scriptable: false`. */
export function isScriptableTool(def: ToolDef): boolean {
  return !def.name.startsWith("code_execution__") && def.scriptable !== false;
}
