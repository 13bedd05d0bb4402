/**
 * @module agent/providers
 * `createProvider`: the config's `provider.name` → a Provider (openai, openai-responses, anthropic, scripted).
 * Re-exports the contract types so callers import from one place.
 */
import { AirlockError } from "../../errors.ts";
import type { ModelRequest, ModelTurn, Provider, ProviderConfig, ProviderOptions } from "./provider.ts";
import { createScriptedProvider } from "./scripted.ts";

export type { ModelRequest, ModelTurn, Provider, ProviderOptions, StopReason } from "./provider.ts";
export { isLoopbackUrl } from "./provider.ts";
export { NO_MODEL_CONFIGURED, parseScript, SCRIPT_ENDED, Script, ScriptedTurn } from "./scripted.ts";

/**
 * Builds the provider the config names. The OpenAI and Anthropic providers (and their SDKs) are loaded
 * on their first `complete`, so a process that never calls a model, or calls another one, does not pay
 * for them at start (docs/performance.md, cold start). `opts.configDir` resolves `provider.script`; `opts.env`
 * (default `process.env`) supplies API keys, read at call time from `provider.api_key_env`
 * (default `OPENAI_API_KEY` / `ANTHROPIC_API_KEY`).
 * @throws AirlockError `config_invalid` when the scripted provider's script is unreadable or invalid.
 */
export function createProvider(cfg: ProviderConfig, opts: ProviderOptions): Provider {
  switch (cfg.name) {
    case "openai":
      return lazyProvider("openai", async () => (await import("./openai.ts")).createOpenAIProvider(cfg, opts));
    case "openai-responses":
      return lazyProvider("openai-responses", async () => (await import("./openai-responses.ts")).createOpenAIResponsesProvider(cfg, opts));
    case "anthropic":
      return lazyProvider("anthropic", async () => (await import("./anthropic.ts")).createAnthropicProvider(cfg, opts));
    case "scripted":
      return createScriptedProvider(cfg, opts);
    default: {
      const unknown: never = cfg.name;
      throw new AirlockError("config_invalid", `provider.name: unknown provider ${JSON.stringify(unknown)}; use openai, openai-responses, anthropic or scripted.`);
    }
  }
}

/** A provider named `name` whose module is loaded by `load` on the first `complete` (once; a failed load is retried). */
function lazyProvider(name: string, load: () => Promise<Provider>): Provider {
  let loading: Promise<Provider> | undefined;
  return {
    name,
    async complete(req: ModelRequest): Promise<ModelTurn> {
      loading ??= load().catch((e: unknown) => {
        loading = undefined;
        throw e;
      });
      return (await loading).complete(req);
    },
  };
}
