/**
 * @module agent/wiring
 * The parts of the runtime built by other modules (gate, approvals, providers, host tools, code
 * execution, MCP sources), gathered in one place so `runtime.ts` stays about lifecycle and policy.
 */
import type { Config } from "../config/schema.ts";
import type { ProviderConfig } from "../config/schema.ts";
import type { Session } from "../session/types.ts";
import type { ToolSource } from "../tool/registry.ts";
import type { ToolDef } from "../tool/tool.ts";
import type { GateLike } from "./loop.ts";
import { Approvals } from "../approval/pending.ts";
import { Gate, type RefusedCall } from "../gate/gate.ts";
import { createCodeExecutionTools } from "../tool/code-execution.ts";
import { hostTools } from "../tool/host-tools.ts";
import { McpManager } from "../tool/mcp/index.ts";
import { createProvider } from "./providers/index.ts";
import type { Provider, ProviderOptions } from "./providers/provider.ts";
import type { GateWiringDeps, Runtime } from "../runtime.ts";

export type { RefusedCall };

/** The gate as the runtime uses it (src/gate/gate.ts). */
export interface GateFull extends GateLike {
  onRefused(l: (r: RefusedCall) => void): () => void;
}

/** The approvals store (src/approval/pending.ts). */
export type ApprovalsLike = Approvals;

export interface Wired {
  approvals: ApprovalsLike;
  gate(deps: GateWiringDeps): GateFull;
  tools: ToolDef[];
  sources: ToolSource[];
  /** Released on runtime close (MCP server processes). */
  close(): Promise<void>;
}

/** Builds the default parts for a runtime whose store, bus, registry, permits and scripts exist. */
export function wireDefaults(rt: Runtime): Wired {
  const mcp = new McpManager({ config: rt.config as Config, defaultWorkspace: rt.workspace, hiddenPaths: [rt.dataDir], log: rt.log });
  return {
    approvals: new Approvals({ store: rt.store, bus: rt.bus, inflight: rt.inflight, approverToken: () => rt.tokens.approverToken }),
    gate: (deps) => new Gate(deps),
    tools: [...createCodeExecutionTools(rt.scripts), ...hostTools()],
    sources: mcp.sources(),
    close: () => mcp.close(),
  };
}

/** Creates the provider for a provider config. @throws AirlockError `config_invalid` / `provider_auth`. */
export function wireProvider(cfg: ProviderConfig, opts: ProviderOptions): Provider {
  return createProvider(cfg, opts);
}

export type { Config, Session };
