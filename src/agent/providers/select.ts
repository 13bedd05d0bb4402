/**
 * @module agent/providers/select
 * Which provider a session talks to (SPEC §6, §10): its effective provider config (the session's own
 * provider name and model over its tree's config), checked against its privacy tier, built once per
 * distinct config and kept.
 */
import { ProviderConfig, type Config, type Privacy } from "../../config/schema.ts";
import { AirlockError } from "../../errors.ts";
import type { NewSession, Session } from "../../session/types.ts";
import { createProvider } from "./index.ts";
import { OPENAI_DEFAULT_BASE_URL, OPENAI_DEFAULT_KEY_ENV, OPENAI_DEFAULT_MODEL } from "./openai-defaults.ts";
import { isLoopbackUrl, type Provider, type ProviderOptions } from "./provider.ts";

/** What choosing a provider needs. */
export interface ProviderSelectorDeps {
  config: Readonly<Config>;
  /** Relative `provider.script` paths resolve against it (absolute). */
  configDir: string;
  /** Where API keys are read from. */
  env: Record<string, string | undefined>;
  retry?: ProviderOptions["retry"];
  /** The session's effective config (run overrides folded in). @throws as `SessionConfigs.configFor`. */
  configFor(session: Session): Readonly<Config>;
}

/** Builds and caches the providers of this process's sessions. */
export class ProviderSelector {
  private readonly providers = new Map<string, Provider>();

  constructor(private readonly deps: ProviderSelectorDeps) {}

  /**
   * The session's provider (cached per provider config): the config's own provider, with the session's model.
   * @throws AirlockError `provider_unavailable` when the session names a provider other than the config's
   *   (except `scripted`, which sends nothing anywhere), `privacy_violation`, `config_invalid`, `provider_auth`, `bad_request`.
   */
  providerFor(session: Session): Provider {
    const cfg = this.providerConfigFor(session, this.deps.configFor(session).provider);
    checkPrivateProvider(session.privacy, cfg);
    const key = JSON.stringify(cfg);
    let p = this.providers.get(key);
    if (!p) {
      p = this.make(cfg);
      this.providers.set(key, p);
    }
    return p;
  }

  /** The session's effective provider config (its own provider name and model over its tree's config). @throws as `configFor`, and `bad_request` for an unknown provider name. */
  providerConfigOf(session: Session): ProviderConfig {
    return this.providerConfigFor(session, this.deps.configFor(session).provider);
  }

  /**
   * Builds the config's own provider now (and keeps it), so a configuration error — an unreadable or
   * invalid `provider.script`, an unset API key variable, no model ({@link checkProviderConfig}) — fails
   * at start instead of as the first turn. `scriptOrigin` names where a relative script path came from
   * when it was not the config file (e.g. `recipe nightly.yaml`); `requireModel` (`airlock run`) makes
   * "no model configured" (the scripted provider without a script) an error instead of a placeholder;
   * `configFile` is named in that error as the file to edit.
   * @throws AirlockError `config_invalid`.
   */
  checkConfigured(opts: { scriptOrigin?: string; requireModel?: boolean; configFile?: string } = {}): void {
    const cfg = this.deps.config.provider;
    checkProviderConfig(cfg, this.deps.env, { requireModel: opts.requireModel === true, ...(opts.configFile ? { configFile: opts.configFile } : {}) });
    const key = JSON.stringify(cfg);
    if (!this.providers.has(key)) this.providers.set(key, this.make(cfg, opts.scriptOrigin));
  }

  /**
   * Refuses a new session whose provider its privacy tier does not allow. A child (`parent` given) is
   * judged under its parent's effective config (its tree's run overrides), a root under the base config.
   * A provider other than the config's is judged as its defaults here (a run's overrides are set after its
   * root is created); its turns fail `provider_unavailable` unless the session's effective config names it.
   * @throws AirlockError `privacy_violation`, `bad_request` (unknown provider name).
   */
  checkNewSession(session: NewSession, parent?: Session): void {
    const base = parent ? this.deps.configFor(parent).provider : this.deps.config.provider;
    // a root may name another provider here: a run's overrides (a recipe's provider:) are set after it is
    // created; its turns are judged by `providerFor` under them (provider_unavailable when still unconfigured)
    checkPrivateProvider(session.privacy, this.providerConfigFor(session, base, { allowOther: true }));
  }

  private providerConfigFor(session: { provider: string; model?: string | null }, base: ProviderConfig, o: { allowOther?: boolean } = {}): ProviderConfig {
    let cfg = base;
    if (session.provider !== cfg.name) {
      const parsed = ProviderConfig.safeParse({ name: session.provider });
      if (!parsed.success) throw new AirlockError("bad_request", `unknown provider ${JSON.stringify(session.provider)}; use openai, openai-responses, anthropic or scripted`);
      // Only the scripted provider (no network) may differ from the config's: any other would be built from
      // its defaults and send the session's messages to an endpoint (api.openai.com, …) this config never names.
      if (parsed.data.name !== "scripted" && o.allowOther !== true) {
        throw new AirlockError(
          "provider_unavailable",
          `the session names provider ${session.provider}, but this process's config configures provider ${cfg.name}${cfg.base_url ? ` at ${cfg.base_url}` : ""}: nothing was sent. Every node of a deployment needs the same provider: settings (docs/scale-out.md); on one node, set provider.name back to ${session.provider} (with its base_url) or start a new session`,
          { session_provider: session.provider, configured_provider: cfg.name },
        );
      }
      cfg = parsed.data;
    }
    if (session.model) cfg = { ...cfg, model: session.model };
    return cfg;
  }

  private make(cfg: ProviderConfig, scriptOrigin?: string): Provider {
    return createProvider(cfg, {
      configDir: this.deps.configDir,
      env: this.deps.env,
      ...(scriptOrigin ? { scriptOrigin } : {}),
      ...(this.deps.retry ? { retry: this.deps.retry } : {}),
    });
  }
}

/**
 * A `private` session may use only providers whose `base_url` is loopback (SPEC §10). The scripted
 * provider makes no network calls and is allowed.
 * @throws AirlockError `privacy_violation`.
 */
export function checkPrivateProvider(privacy: Privacy, cfg: ProviderConfig): void {
  if (privacy !== "private" || cfg.name === "scripted") return;
  if (!isLoopbackUrl(cfg.base_url)) {
    throw new AirlockError(
      "privacy_violation",
      `a private session may use only a provider on this machine, but ${cfg.name} points at ${cfg.base_url ?? "its public default endpoint"}; set provider.base_url to a loopback address (e.g. http://127.0.0.1:11434/v1) or make the session public`,
    );
  }
}

/** The key variable each key-taking provider reads when `provider.api_key_env` is not set. */
const DEFAULT_KEY_ENV: Partial<Record<ProviderConfig["name"], string>> = { openai: OPENAI_DEFAULT_KEY_ENV, "openai-responses": OPENAI_DEFAULT_KEY_ENV, anthropic: "ANTHROPIC_API_KEY" };

/**
 * What a provider config needs before any model call, checked at start (`Runtime.checkProvider`):
 * - a provider that takes a key (openai, openai-responses, anthropic) pointed at a non-loopback server needs its key
 *   variable (`provider.api_key_env`, default `OPENAI_API_KEY` / `ANTHROPIC_API_KEY`) set and non-empty
 *   in `env`; the message says the variable is unset, never that a key was refused;
 * - `openai` / `openai-responses` with a `base_url` of its own (Ollama, vLLM, …) needs `provider.model`: the default model
 *   name is OpenAI's and means nothing to another server;
 * - with `requireModel`, the scripted provider needs a `script` (else no model is configured at all;
 *   the message names `configFile`, the file to edit, and, when a `model` is set — `airlock run --model` without
 *   `--provider` —, that the provider's name is what is missing).
 * @throws AirlockError `config_invalid` naming the key to set.
 */
export function checkProviderConfig(cfg: ProviderConfig, env: Record<string, string | undefined>, o: { requireModel?: boolean; configFile?: string } = {}): void {
  if (cfg.name === "scripted") {
    if (o.requireModel && !cfg.script && cfg.model) {
      // a model named (`--model`, provider.model) without the provider that serves it: say what is missing
      throw new AirlockError(
        "config_invalid",
        `no model configured: provider.model is ${JSON.stringify(cfg.model)}, but no provider is named to run it — provider.name is scripted (the default when it is not set), the built-in scripted provider, which runs no model and has no script. Name the provider: --provider openai, openai-responses or anthropic with airlock run, or provider.name (and provider.base_url for a server of your own) in ${o.configFile ?? "airlock.yaml"} (docs/configuration.md).`,
        { path: "provider.name" },
      );
    }
    if (o.requireModel && !cfg.script) {
      throw new AirlockError(
        "config_invalid",
        `no model configured: provider is the built-in scripted provider with no script, so there is no model to answer. Set provider.name, provider.model and provider.base_url in ${o.configFile ?? "airlock.yaml"} (docs/configuration.md, docs/quickstart.md §6); airlock run also takes --provider and --model.`,
        { path: "provider" },
      );
    }
    return;
  }
  const keyVar = cfg.api_key_env ?? DEFAULT_KEY_ENV[cfg.name];
  const remote = !isLoopbackUrl(cfg.base_url);
  if (keyVar && remote && !env[keyVar]) {
    throw new AirlockError(
      "config_invalid",
      `provider.api_key_env: the environment variable ${keyVar} is unset (or empty), and the ${cfg.name} provider at ${cfg.base_url ?? "its public endpoint"} needs an API key. Set ${keyVar}, or name the variable that holds the key with provider.api_key_env.`,
      { path: "provider.api_key_env", key_env: keyVar },
    );
  }
  if ((cfg.name === "openai" || cfg.name === "openai-responses") && cfg.base_url && cfg.base_url.replace(/\/+$/, "") !== OPENAI_DEFAULT_BASE_URL && !cfg.model) {
    throw new AirlockError(
      "config_invalid",
      `provider.model: not set, and the server at ${cfg.base_url} needs a model name (the default ${JSON.stringify(OPENAI_DEFAULT_MODEL)} is OpenAI's). Set provider.model to a model that server has (e.g. llama3.1 for Ollama), or pass --model.`,
      { path: "provider.model" },
    );
  }
}