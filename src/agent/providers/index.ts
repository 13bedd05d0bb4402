/**
 * @module agent/providers
 * `createProvider`: the config's `provider.name` → a Provider (openai, openai-responses, anthropic, scripted).
 * Re-exports the contract types so callers import from one place.
 */
import { AirlockError } from "../../errors.ts";
import { createAnthropicProvider } from "./anthropic.ts";
import { createOpenAIProvider } from "./openai.ts";
import { createOpenAIResponsesProvider } from "./openai-responses.ts";
import type { Provider, ProviderConfig, ProviderOptions } from "./provider.ts";
import { createScriptedProvider } from "./scripted.ts";

export type { ModelRequest, ModelTurn, Provider, ProviderOptions, StopReason } from "./provider.ts";
export { isLoopbackUrl } from "./provider.ts";
export { NO_MODEL_CONFIGURED, parseScript, SCRIPT_ENDED, Script, ScriptedTurn } from "./scripted.ts";

/**
 * Builds the provider the config names. `opts.configDir` resolves `provider.script`; `opts.env`
 * (default `process.env`) supplies API keys, read at call time from `provider.api_key_env`
 * (default `OPENAI_API_KEY` / `ANTHROPIC_API_KEY`).
 * @throws AirlockError `config_invalid` when the scripted provider's script is unreadable or invalid.
 */
export function createProvider(cfg: ProviderConfig, opts: ProviderOptions): Provider {
  switch (cfg.name) {
    case "openai":
      return createOpenAIProvider(cfg, opts);
    case "openai-responses":
      return createOpenAIResponsesProvider(cfg, opts);
    case "anthropic":
      return createAnthropicProvider(cfg, opts);
    case "scripted":
      return createScriptedProvider(cfg, opts);
    default: {
      const unknown: never = cfg.name;
      throw new AirlockError("config_invalid", `provider.name: unknown provider ${JSON.stringify(unknown)}; use openai, openai-responses, anthropic or scripted.`);
    }
  }
}
