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

  /** The session's provider (cached per provider config). @throws AirlockError `privacy_violation`, `config_invalid`, `provider_auth`, `bad_request`. */
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
   * invalid `provider.script` — fails at start instead of as the first turn. `scriptOrigin` names where a
   * relative script path came from when it was not the config file (e.g. `recipe nightly.yaml`).
   * @throws AirlockError `config_invalid`.
   */
  checkConfigured(opts: { scriptOrigin?: string } = {}): void {
    const cfg = this.deps.config.provider;
    const key = JSON.stringify(cfg);
    if (!this.providers.has(key)) this.providers.set(key, this.make(cfg, opts.scriptOrigin));
  }

  /**
   * Refuses a new session whose provider its privacy tier does not allow. A child (`parent` given) is
   * judged under its parent's effective config (its tree's run overrides), a root under the base config.
   * @throws AirlockError `privacy_violation`, `bad_request` (unknown provider name).
   */
  checkNewSession(session: NewSession, parent?: Session): void {
    const base = parent ? this.deps.configFor(parent).provider : this.deps.config.provider;
    checkPrivateProvider(session.privacy, this.providerConfigFor(session, base));
  }

  private providerConfigFor(session: { provider: string; model?: string | null }, base: ProviderConfig): ProviderConfig {
    let cfg = base;
    if (session.provider !== cfg.name) {
      const parsed = ProviderConfig.safeParse({ name: session.provider });
      if (!parsed.success) throw new AirlockError("bad_request", `unknown provider ${JSON.stringify(session.provider)}; use openai, anthropic or scripted`);
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
