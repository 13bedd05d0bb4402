/**
 * @module tool/mcp
 * MCP servers as tool sources (issue 8): every server under `mcp_servers` becomes a `ToolSource`
 * whose tools are `server__tool`, judged by the gate like any other tool, each server process
 * confined by the launcher's sandbox policy. See docs/mcp.md.
 */
import type { Tool } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import type { Config } from "../../config/schema.ts";
import { AirlockError } from "../../errors.ts";
import { checkWarning } from "../../launcher/roots.ts";
import type { ToolDef } from "../tool.ts";
import type { BackoffPolicy } from "./backoff.ts";
import { contentText, resultValue } from "./result.ts";
import { McpServer, type McpServerStatus } from "./server.ts";

export { McpServer, type McpServerStatus } from "./server.ts";

/** A dynamic set of tools sharing a name prefix (same shape as src/tool/registry.ts's `ToolSource`). */
export interface ToolSource {
  /** `${server}__` */
  prefix: string;
  /** The tools right now (starts the server on first use; never throws — a down server lists its last-known tools). */
  list(): Promise<ToolDef[]>;
  /** `mcp_server_unavailable` naming the server and why its last listing failed; undefined when it listed. */
  unavailable(): AirlockError | undefined;
}

export interface McpManagerOptions {
  config: Config;
  /** Absolute path: the writable root (under `workspace-write`) and default cwd of every server. */
  defaultWorkspace: string;
  /** Where server stderr and lifecycle lines go; default: airlock's stderr. Never stdout. */
  log?: (line: string) => void;
  /** Restart backoff (tests); default 0 / 250 ms / 1 s / 4 s, at most 5 failures a minute. */
  backoff?: BackoffPolicy;
  /** The bubblewrap binary; default `bwrap` on PATH; `null` = treat as missing (tests). */
  bwrapPath?: string | null;
  /** Folders hidden from confined servers behind an empty tmpfs (airlock's data dir: tokens, database). */
  hiddenPaths?: string[];
}

/** Any JSON object: the server validates against its own `inputSchema` (shown to the model via `jsonSchema`). */
const AnyObject = z.record(z.string(), z.unknown());

/** A tool name safe for every provider (`[a-zA-Z0-9_-]`): other characters become `_`. */
export function safeToolName(name: string): string {
  return name.replace(/[^a-zA-Z0-9_-]/g, "_");
}

/** The airlock ToolDef for tool `t` of `server`: `server__tool`, the server's schema, calls through the server. */
export function mcpToolDef(server: McpServer, t: Tool): ToolDef<Record<string, unknown>> {
  const name = `${server.name}__${safeToolName(t.name)}`;
  const jsonSchema = { ...(t.inputSchema as Record<string, unknown>) };
  jsonSchema.type ??= "object";
  return {
    name,
    description: t.description || t.title || `Tool ${t.name} of the MCP server "${server.name}".`,
    schema: AnyObject,
    jsonSchema,
    readOnly: t.annotations?.readOnlyHint === true,
    usesPermit: true,
    scriptable: true,
    claude: { name: `mcp__${server.name}__${t.name}`, input: (args) => args, args: (input) => input },
    async execute(args, ctx) {
      const res = await server.call(t.name, args, ctx.signal);
      if (res.isError) {
        const text = contentText(res).trim() || "the tool reported an error without a message";
        throw new AirlockError("mcp_tool_error", `${name} failed: ${text}`, { server: server.name, tool: t.name });
      }
      const warning = checkWarning({ quarantined: res.quarantined ?? [], incomplete: res.checkIncomplete ?? [] });
      if (warning) return { result: resultValue(res), warning };
      return resultValue(res);
    },
  };
}

/**
 * Owns one `McpServer` per entry of `config.mcp_servers`. Servers start lazily (first listing or
 * call), are shared by every session, and stop (process tree killed) on `close()`.
 */
export class McpManager {
  private readonly servers = new Map<string, McpServer>();
  private readonly defs = new WeakMap<Tool, ToolDef>();

  constructor(opts: McpManagerOptions) {
    const log = opts.log ?? ((line: string) => void process.stderr.write(line + "\n"));
    for (const [name, server] of Object.entries(opts.config.mcp_servers)) {
      this.servers.set(
        name,
        new McpServer({ name, server, config: opts.config, workspace: opts.defaultWorkspace, log, backoff: opts.backoff, bwrapPath: opts.bwrapPath, hiddenPaths: opts.hiddenPaths }),
      );
    }
  }

  /** One source per configured server, prefix `${name}__`. */
  sources(): ToolSource[] {
    return [...this.servers.values()].map((server) => ({
      prefix: `${server.name}__`,
      list: async () => (await server.tools()).map((t) => this.def(server, t)),
      unavailable: () => {
        const why = server.listFailure();
        if (why === undefined) return undefined;
        const message = why.includes(`"${server.name}"`) ? why : `MCP server "${server.name}" is unavailable: ${why}`;
        return new AirlockError("mcp_server_unavailable", message, { server: server.name });
      },
    }));
  }

  /** The server named `name` (for status, tests and benchmarks). */
  server(name: string): McpServer | undefined {
    return this.servers.get(name);
  }

  status(): McpServerStatus[] {
    return [...this.servers.values()].map((s) => s.status());
  }

  /** Stops every server; resolves when their process trees are gone. */
  async close(): Promise<void> {
    await Promise.all([...this.servers.values()].map((s) => s.close()));
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  private def(server: McpServer, t: Tool): ToolDef {
    let d = this.defs.get(t);
    if (!d) {
      d = mcpToolDef(server, t);
      this.defs.set(t, d);
    }
    return d;
  }
}
