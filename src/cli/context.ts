/**
 * @module cli/context
 * What every command starts from: the data dir, the validated config and the tokens, resolved
 * from the shared `--data-dir` / `--config` flags and the environment.
 */
import type { Config } from "../config/schema.ts";

/** Flags every command accepts (SPEC §2). */
export interface CommonOptions {
  /** `--data-dir DIR`: overrides `$AIRLOCK_HOME` / `$XDG_DATA_HOME/airlock` / `~/.local/share/airlock`. */
  dataDir?: string;
  /** `--config FILE`: the config file; default `<data dir>/airlock.yaml` (missing = defaults). */
  config?: string;
}

/** The resolved context of one CLI invocation. */
export interface CliContext {
  /** Absolute path of the data dir (exists, created 0700 if it was missing). */
  dataDir: string;
  /** The validated, deeply frozen config. */
  config: Readonly<Config>;
  /** Absolute path of the config file read, or null when the defaults apply. */
  configPath: string | null;
  /** Directory relative paths of the config resolve against. */
  configDir: string;
  /** The config file's text as parsed (UTF-8), or null when the defaults apply (no file). */
  configText: string | null;
}

/**
 * Resolves the data dir and loads the config.
 * @throws AirlockError `usage` (data dir unusable) or `config_invalid` (config file missing/invalid).
 */
export async function resolveContext(opts: CommonOptions, env: Record<string, string | undefined> = process.env, configText?: string): Promise<CliContext> {
  const { resolveDataDir } = await import("../config/paths.ts");
  const { loadConfig } = await import("../config/load.ts");
  const dataDir = resolveDataDir({ flag: opts.dataDir, env });
  const loaded = loadConfig({ configPath: opts.config, dataDir, ...(configText !== undefined ? { text: configText } : {}) });
  return { dataDir, config: loaded.config, configPath: loaded.path, configDir: loaded.dir, configText: loaded.text };
}

/**
 * The base URL of the running `airlock serve` to talk to: `--url` if given, else
 * `http://<server.host>:<server.port>` from the config (IPv6 hosts bracketed).
 */
export function serverUrl(ctx: CliContext, url?: string): string {
  if (url) return url.replace(/\/+$/, "");
  const host = ctx.config.server.host.includes(":") ? `[${ctx.config.server.host}]` : ctx.config.server.host;
  return `http://${host}:${ctx.config.server.port}`;
}
