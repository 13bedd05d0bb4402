/**
 * @module config/warnings
 * What a valid config may still get wrong without failing validation, said once at start-up and by
 * `airlock doctor`: a provider key the chosen provider ignores, a hook command whose script path does
 * not exist. Pure reads of the config (and `existsSync` for hook paths); nothing here throws.
 */
import { existsSync } from "node:fs";
import { isAbsolute, join } from "node:path";
import { HOOK_EVENTS, defaultConfig, type Config, type ProviderName } from "./schema.ts";
import { parseYaml, type SourcePos } from "./load.ts";
import { MAX_CONFIG_FILE_BYTES, readRegularFile } from "./paths.ts";

/** Provider keys read by only some providers (src/agent/providers/): the providers that read each. */
const PROVIDER_ONLY: Readonly<Record<string, readonly ProviderName[]>> = {
  script: ["scripted"],
  thinking_budget_tokens: ["anthropic"],
  prompt_caching: ["anthropic"],
  replay_reasoning_content: ["openai"],
  base_url: ["openai", "openai-responses", "anthropic"],
  api_key_env: ["openai", "openai-responses", "anthropic"],
};

/**
 * The script a hook command starts, when it names one by path: its first word, unquoted, when that is an
 * absolute path or starts with `$AIRLOCK_CONFIG_DIR/` (`${AIRLOCK_CONFIG_DIR}/`), that variable replaced by
 * `configDir`. Undefined for anything else (a bare program name, a relative path, a pipeline's later words).
 */
export function hookScriptPath(command: string, configDir: string): string | undefined {
  const m = /^\s*(["']?)(\$\{?AIRLOCK_CONFIG_DIR\}?\/[^"'\s;|&]*|\/[^"'\s;|&]*)\1(?:\s|$|;|\|)/.exec(command);
  if (!m) return undefined;
  const word = m[2]!;
  const p = word.replace(/^\$\{?AIRLOCK_CONFIG_DIR\}?/, configDir);
  return isAbsolute(p) ? p : join(configDir, p);
}

/**
 * The warnings of a valid config, one line each (no `airlock:` prefix):
 * - `provider.<key>` set but ignored by `provider.name` (e.g. `provider.script` under `name: openai`);
 * - a hook (of any event) whose command starts with a script path that does not exist: an absolute path,
 *   or one under `$AIRLOCK_CONFIG_DIR` (the config file's folder, `configDir`).
 * @param configDir the folder of the config file (absolute), what `$AIRLOCK_CONFIG_DIR` is set to for hooks.
 * - `fleet:` set (not the defaults) while the store is the embedded SQLite database (no `storage:` and no
 *   `$AIRLOCK_DATABASE_URL` in `env`): only several processes on PostgreSQL read it.
 * @param configPath the config file, when there is one: lines then carry `(line L, column C)` of the key.
 * @param env where `$AIRLOCK_DATABASE_URL` is read (default `process.env`).
 */
export function configWarnings(config: Readonly<Config>, configDir: string, configPath?: string | null, env: Readonly<Record<string, string | undefined>> = process.env): string[] {
  const at = locator(configPath);
  const out: string[] = [];
  const onSqlite = config.storage === undefined && (env.AIRLOCK_DATABASE_URL ?? "").trim() === "";
  if (onSqlite && JSON.stringify(config.fleet) !== JSON.stringify(defaultConfig().fleet)) {
    out.push(`fleet${at(["fleet"])} is ignored: the store is the embedded SQLite database (one process owns it); fleet: is read only with storage: postgres://… (docs/scale-out.md); remove it or set storage:`);
  }
  const provider = config.provider as Record<string, unknown>;
  for (const [key, readers] of Object.entries(PROVIDER_ONLY)) {
    if (provider[key] === undefined || readers.includes(config.provider.name)) continue;
    out.push(
      `provider.${key}${at(["provider", key])} is ignored by the ${config.provider.name} provider (only ${readers.join(", ")} read${readers.length === 1 ? "s" : ""} it); remove it or change provider.name`,
    );
  }
  for (const event of HOOK_EVENTS) {
    const groups = config.hooks[event] ?? [];
    groups.forEach((g, gi) =>
      g.hooks.forEach((h, hi) => {
        const p = hookScriptPath(h.command, configDir);
        if (p === undefined || existsSync(p)) return;
        out.push(
          `hooks.${event}[${gi}].hooks[${hi}].command${at(["hooks", event, gi, "hooks", hi, "command"])}: ${p} does not exist, so this hook fails every time it runs; ` +
            "create it, or fix the path ($AIRLOCK_CONFIG_DIR is the config file's folder; hooks run in the workspace)",
        );
      }),
    );
  }
  return out;
}

/**
 * ` (line L, column C)` of a key path in the YAML file `configPath` (the key's position), or "" when the
 * file is not given, cannot be read or parsed, or has no such key. For messages about a valid config.
 */
export function locator(configPath?: string | null): (path: readonly PropertyKey[]) => string {
  if (!configPath) return () => "";
  // the file is read and parsed on the first position asked for: a valid config asks none (start-up cost)
  let locate: ((path: readonly PropertyKey[], at?: "key" | "value") => SourcePos | undefined) | null | undefined;
  return (path) => {
    if (locate === undefined) {
      try {
        locate = parseYaml(readRegularFile(configPath, { maxBytes: MAX_CONFIG_FILE_BYTES }).toString("utf8"), configPath).locate;
      } catch {
        locate = null;
      }
    }
    const pos = locate?.(path, "key");
    return pos ? ` (line ${pos.line}, column ${pos.col})` : "";
  };
}
