/**
 * @module cli/early-request
 * `airlock run`'s early request (SPEC §2, "The early request"; docs/performance.md, issue 20): the first
 * model request leaves before the runtime's set-up (zod, the store, the session rows, the SDK), and the
 * `openai` adapter adopts it only when its own first request is the same bytes (agent/providers/early.ts).
 *
 * The config comes from the validated-config cache (`<data dir>/config-cache.json`, written by the normal
 * path after it validated the config): a hit needs the same key, a SHA-256 over every input of config
 * resolution ({@link configCacheKey}). Nothing is sent unless the request is certainly the first one the
 * normal path will make ({@link earlyRefusal}); when in doubt, nothing is sent. No zod, no SDK, no store
 * is loaded here (test/startup-closure.test.ts).
 */
import { closeSync, constants, openSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { APPROVER_TOKEN_FILE, dataDirConfigCheck, dataDirProblem, MAX_CONFIG_FILE_BYTES, MAX_TOKEN_FILE_BYTES, pickDataDir, readRegularFile } from "../config/paths.ts";
import type { Config } from "../config/schema.ts";
import { contextTokensFor, estimateTextTokens, TRIGGER_SHARE } from "../agent/context-size.ts";
import { offerEarlyRequest } from "../agent/providers/early.ts";
import { OPENAI_DEFAULT_BASE_URL, OPENAI_DEFAULT_KEY_ENV, OPENAI_DEFAULT_MODEL, OPENAI_USER_AGENT } from "../agent/providers/openai-defaults.ts";
import { chatCompletionsBody, chatCompletionsUrl, replaysReasoningContent } from "../agent/providers/openai-request.ts";
import { isLoopbackUrl } from "../agent/providers/provider.ts";
import { SYSTEM_PROMPTS } from "../agent/system-prompts.ts";
import { cannedOffered } from "../tool/canned-specs.ts";
import type { ToolSpec } from "../tool/tool.ts";
import { BUILD_ID, treeDigest } from "./canned-build.ts";
import { earlySwitchedOff } from "./early-switch.ts";

/** What the early path reads of `airlock run`'s options (cli/run.ts `RunOptions`, restated: run.ts imports this module). */
export interface EarlyRunOptions {
  dataDir?: string;
  config?: string;
  recipe?: string;
  param?: Record<string, string>;
  mode?: string;
  sandbox?: string;
  provider?: string;
  model?: string;
  workspace?: string;
}

/** The cache file's name in the data dir. */
export const CONFIG_CACHE_FILE = "config-cache.json";

/**
 * Every environment variable config resolution reads (`resolveContext` → `pickDataDir`; `loadConfig` reads
 * none): each is part of the cache key. src/cli/early-request.test.ts fails when they read another.
 */
export const CONFIG_ENV_INPUTS = ["AIRLOCK_HOME", "XDG_DATA_HOME", "HOME"] as const;
/** The largest cache file read, bytes. */
const MAX_CACHE_BYTES = 1 << 20;
/** The cache file's format version. */
const CACHE_VERSION = 1;

type Env = Record<string, string | undefined>;

/** Where config resolution reads from, and the key of its result. */
export interface ConfigCacheSlot {
  /** The data dir as `pickDataDir` gives it (absolute). */
  dataDir: string;
  /** The config file read (absolute), as `loadConfig` picks it. */
  configPath: string;
  /** The hex HMAC-SHA-256 key. */
  key: string;
  /** The config file's bytes the key was computed from, as UTF-8 text (as `loadConfig` reads them), or null (no file). */
  text: string | null;
}

/** The build id: the binary's recorded one, or from source a digest of `src/config/` (the schema and loader). */
function buildId(): string {
  if (BUILD_ID !== null) return BUILD_ID;
  return `source:${treeDigest(join(import.meta.dir, "..", "config"), "airlock source")}`;
}

/**
 * The cache key of the config `resolveContext(opts, env)` would resolve now: an HMAC-SHA-256, keyed with the data
 * dir's approver token, over the build id, the
 * data dir and config path (`--data-dir`, `--config`, the cwd they resolve against), whether `--config` was
 * given, the config file's bytes (or its absence), and every variable of {@link CONFIG_ENV_INPUTS}.
 * @returns undefined when the data dir is one the runtime refuses, or the config file or the approver token cannot be read (the normal path reports the first;
 *   the runtime creates the second), or the token is not a regular file of at most 4 KiB (not followed through a link).
 */
export function configCacheKey(opts: Pick<EarlyRunOptions, "dataDir" | "config">, env: Env): ConfigCacheSlot | undefined {
  const dataDir = pickDataDir({ flag: opts.dataDir, env }).dir;
  // nothing of a data dir the runtime refuses (another user's, one its group or others may write, or one under a folder
  // another user may change: config/paths.ts dataDirProblem) is read here, nor sent from: the run exits 2 before reading it
  if (dataDirProblem(dataDir) !== undefined) return undefined;
  const explicit = opts.config !== undefined && opts.config !== "";
  const configPath = explicit ? resolve(opts.config!) : join(dataDir, "airlock.yaml");
  let bytes: Buffer | null;
  try {
    // the data dir's own file as loadConfig reads it: only one no other user may change (config/paths.ts dataDirConfigCheck); over the cap: the normal path says so
    bytes = readRegularFile(configPath, explicit ? { maxBytes: MAX_CONFIG_FILE_BYTES } : { maxBytes: MAX_CONFIG_FILE_BYTES, check: (_fd, st) => dataDirConfigCheck(configPath, st) });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "ENOENT" || explicit) return undefined;
    bytes = null;
  }
  // keyed with the approver token too: no process airlock starts can read it (launcher/bwrap.ts DATA_DIR_SECRETS),
  // so none can forge a cache entry the early request would trust; no token yet (a first run): no key until the runtime made one
  // only a regular file, not followed through a symbolic link, opened without blocking: a FIFO or a device there
  // would hang (or fill) this read before the normal path could refuse it (config/paths.ts)
  // and owned by this user, as the runtime requires of it (config/paths.ts ensureTokens: it refuses another's token)
  let token: Buffer;
  try {
    token = readRegularFile(join(dataDir, APPROVER_TOKEN_FILE), { follow: false, maxBytes: MAX_TOKEN_FILE_BYTES, owner: "self" });
  } catch {
    return undefined;
  }
  // an empty (or blank) token is no secret, so no key: the runtime refuses it too (ensureTokens), but only after the
  // early request went out with a config anyone could have keyed
  if (token.toString("utf8").trim() === "") return undefined;
  const h = new Bun.CryptoHasher("sha256", token);
  h.update(JSON.stringify({ v: CACHE_VERSION, build: buildId(), dataDir, configPath, explicit, env: CONFIG_ENV_INPUTS.map((n) => env[n] ?? null) }));
  h.update(bytes === null ? "\0absent" : "\0file\0");
  if (bytes !== null) h.update(bytes);
  return { dataDir, configPath, key: h.digest("hex"), text: bytes === null ? null : bytes.toString("utf8") };
}

/**
 * The validated config cached for `slot.key`, or undefined (a miss). Only a regular file (no symlink) owned
 * by this user, not writable by group or others, at most 1 MiB, holding `{v, key, config}` with this key
 * counts; anything else (absent, stale, tampered, unreadable, not JSON, a FIFO or a device: never blocks) is a miss.
 */
export function readConfigCache(slot: ConfigCacheSlot): Readonly<Config> | undefined {
  try {
    // opened without blocking: a FIFO put there (by anyone who can write the data dir) would otherwise hang the run
    // in open(2) until a writer came; it is no regular file, a miss
    const bytes = readRegularFile(join(slot.dataDir, CONFIG_CACHE_FILE), { follow: false, maxBytes: MAX_CACHE_BYTES, owner: "self", notWritableByOthers: true });
    const saved = JSON.parse(bytes.toString("utf8")) as { v?: unknown; key?: unknown; config?: unknown };
    if (saved.v !== CACHE_VERSION || saved.key !== slot.key || typeof saved.config !== "object" || saved.config === null) return undefined;
    return saved.config as Config;
  } catch {
    return undefined;
  }
}

/**
 * Writes `{v, key, config}` to the cache (mode 0600, a fresh file renamed into place), when `config` was
 * validated from the very text the key was computed from (`text`: what `loadConfig` parsed, null for no file;
 * a file rewritten and restored while the run started would otherwise cache the other text's config under this
 * key) and the config file still has those bytes (re-keyed now: a file changed meanwhile is not cached under
 * its old key). Failures are ignored: the cache is only ever a shortcut.
 */
export function writeConfigCache(slot: ConfigCacheSlot, opts: Pick<EarlyRunOptions, "dataDir" | "config">, env: Env, config: Readonly<Config>, text: string | null): void {
  if (text !== slot.text) return;
  const again = configCacheKey(opts, env);
  if (!again || again.key !== slot.key) return;
  const tmp = join(slot.dataDir, `${CONFIG_CACHE_FILE}.${process.pid}.${Date.now()}.tmp`);
  try {
    const fd = openSync(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
    try {
      writeFileSync(fd, JSON.stringify({ v: CACHE_VERSION, key: slot.key, config }));
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, join(slot.dataDir, CONFIG_CACHE_FILE));
  } catch {
    rmSync(tmp, { force: true });
  }
}

/**
 * Why `airlock run PROMPT opts` must not send early with `config` (undefined: it may). The request is sent
 * only when it is certainly the first the normal path makes: the `openai` provider with its key variable set
 * (a key that a header would keep as it is: no leading or trailing whitespace) and a model the server accepts (`checkProviderConfig`'s rules) and a `base_url` without query or fragment; PROMPT given as an argument (well-formed, no NUL; not `-`, not
 * blank); no `--recipe`, `--param`, `--mode`, `--sandbox`, `--provider`, `--model`, `--config` (the config is the data dir's own); the workspace an existing
 * folder; no hook of any event and `hooks.import_claude_settings` off (a `SessionStart` or `UserPromptSubmit`
 * hook may change or block the prompt); no MCP server (their tools join the request); no
 * `limits.max_tokens_per_run` (a budget may refuse the call); not `private` unless the server is loopback
 * (SPEC §10); SQLite storage (`storage:` and `$AIRLOCK_DATABASE_URL` unset); and a request small enough that
 * history shrinking (agent/compact.ts) leaves it as it is.
 */
export function earlyRefusal(prompt: string | undefined, opts: EarlyRunOptions, config: Readonly<Config>, env: Env): string | undefined {
  if (prompt === undefined || prompt === "-" || prompt.trim() === "") return "no PROMPT argument";
  // the normal path sends the prompt as stored and read back: text SQLite might not give back as it was is left to it
  if (!prompt.isWellFormed() || prompt.includes("\0")) return "a prompt with a lone surrogate or NUL";
  if (opts.recipe !== undefined || Object.keys(opts.param ?? {}).length > 0) return "a recipe";
  if (opts.mode || opts.sandbox || opts.provider || opts.model) return "a flag override";
  // the cache and its HMAC key live in the data dir: a process that can replace the data dir (a tool under
  // danger-full-access may rename it; only its secret files are masked) would control both, so a config file kept
  // elsewhere (one it cannot write) is never answered from the cache. The data dir's own airlock.yaml: that process
  // could rewrite it anyway.
  if (opts.config !== undefined && opts.config !== "") return "--config";
  const p = config.provider;
  if (p.name !== "openai") return `provider ${p.name}`;
  const key = env[p.api_key_env ?? OPENAI_DEFAULT_KEY_ENV];
  if (!key) return "no API key variable";
  // a header value is normalised (leading and trailing whitespace dropped) or refused by Headers: the SDK's
  // `authorization` would then differ from the early one's, and the turn would cost two requests
  if (!headerKeepsValue(`Bearer ${key}`)) return "an API key a header would change";
  if (p.base_url && p.base_url.replace(/\/+$/, "") !== OPENAI_DEFAULT_BASE_URL && !p.model) return "no model";
  // the SDK re-encodes a query string of its own way: such a base_url is left to it
  if (p.base_url && /[?#]/.test(p.base_url)) return "a query in base_url";
  const hooks = config.hooks as unknown as Record<string, unknown>;
  if (hooks.import_claude_settings !== false) return "hooks.import_claude_settings";
  for (const [k, v] of Object.entries(hooks)) if (k !== "import_claude_settings" && (!Array.isArray(v) || v.length > 0)) return `hooks.${k}`;
  if (Object.keys(config.mcp_servers ?? {}).length > 0) return "MCP servers";
  if (config.limits.max_tokens_per_run !== undefined) return "limits.max_tokens_per_run";
  if (config.privacy !== "public" && !isLoopbackUrl(p.base_url)) return "privacy";
  if (config.storage !== undefined || env.AIRLOCK_DATABASE_URL) return "PostgreSQL storage";
  if (!(config.tools.offer in SYSTEM_PROMPTS)) return "tools.offer";
  try {
    if (!statSync(resolve(opts.workspace ?? process.cwd())).isDirectory()) return "workspace";
  } catch {
    return "workspace";
  }
  return undefined;
}

/** Whether `value` is a header value `Headers` keeps as it is (not trimmed, not refused). */
function headerKeepsValue(value: string): boolean {
  try {
    return new Headers({ v: value }).get("v") === value;
  } catch {
    return false;
  }
}

/** What `startEarlyRequest` leaves for the normal path. */
export interface EarlyStart {
  /** Whether a request was sent (and waits in agent/providers/early.ts to be adopted). */
  sent: boolean;
  /**
   * When sent: the config file's text the request was sent with (the normal path parses this text, not the file
   * read again, so a file changed meanwhile cannot give the rest of the run another config than its first request's).
   */
  configText?: string;
  /** Called with the config the normal path validated and the text it parsed (`loadConfig`'s `text`): writes the cache on a miss. */
  configLoaded(config: Readonly<Config>, text: string | null): void;
}

/**
 * Looks the config up in the cache and, on a hit where {@link earlyRefusal} allows it, sends the turn's first
 * chat-completions request now and offers it for adoption. On a miss nothing is sent; the cache is written once
 * the normal path has validated the config (`configLoaded`).
 * When no key can be computed at the start (no approver token yet: a data dir's first run; or the config file
 * cannot be read), nothing is sent and `configLoaded` keys and writes the cache then, if it can.
 * @returns undefined when switched off ({@link earlySwitchedOff}) or the key's inputs could not be read without an
 *   error. Never throws.
 */
export async function startEarlyRequest(prompt: string | undefined, opts: EarlyRunOptions, env: Env = process.env): Promise<EarlyStart | undefined> {
  if (earlySwitchedOff(env)) return undefined;
  let slot: ConfigCacheSlot | undefined;
  try {
    slot = configCacheKey(opts, env);
  } catch {
    return undefined;
  }
  // no key now (a data dir's first run: no approver token yet, the runtime creates it): nothing is sent, and the
  // cache is keyed once the normal path accepted the config, by then under the token it created — so the second
  // run is the first early one, not the third. The same checks as a miss's write: the text parsed must be the
  // text keyed, and the file must still have it.
  if (!slot) return { sent: false, configLoaded: (config, text) => writeLateConfigCache(opts, env, config, text) };
  const cached = readConfigCache(slot);
  const s = slot;
  const start: EarlyStart = { sent: false, configLoaded: (config, text) => (cached ? undefined : writeConfigCache(s, opts, env, config, text)) };
  if (!cached) return start;
  try {
    if (earlyRefusal(prompt, opts, cached, env) !== undefined) return start;
    const offer = cached.tools.offer;
    const tools = cannedOffered(offer) ?? (await import("../tool/offered-specs.ts")).offeredBuiltInSpecs()[offer];
    start.sent = send(prompt!, cached, tools, env);
    // never null when sent: the defaults' provider (scripted) is never sent early
    if (start.sent && s.text !== null) start.configText = s.text;
  } catch {
    // never a reason for the run to fail: the normal path sends the request itself
  }
  return start;
}

/** {@link writeConfigCache} under a key computed now (the run started without one); failures ignored, as there. */
function writeLateConfigCache(opts: EarlyRunOptions, env: Env, config: Readonly<Config>, text: string | null): void {
  try {
    const slot = configCacheKey(opts, env);
    if (slot) writeConfigCache(slot, opts, env, config, text);
  } catch {
    // the cache is only ever a shortcut
  }
}

/** Builds and sends the request; false when history shrinking could change it (nothing sent). */
function send(prompt: string, config: Readonly<Config>, offered: readonly ToolSpec[], env: Env): boolean {
  const p = config.provider;
  const system = SYSTEM_PROMPTS[config.tools.offer];
  const tools = [...offered];
  // agent/compact.ts `prepare` on the first call: no shrinking while the raw estimate stays under the trigger
  const limit = contextTokensFor(p);
  const raw = estimateTextTokens(system) + estimateTextTokens(JSON.stringify(tools)) + 4 + estimateTextTokens(prompt);
  if (limit !== null && raw > limit * TRIGGER_SHARE) return false;
  const body = JSON.stringify(
    chatCompletionsBody({ model: p.model ?? OPENAI_DEFAULT_MODEL, system, messages: [{ role: "user", content: prompt }], tools, replayReasoning: replaysReasoningContent(p) }),
  );
  const url = chatCompletionsUrl(p.base_url ?? OPENAI_DEFAULT_BASE_URL);
  const headers = { authorization: `Bearer ${env[p.api_key_env ?? OPENAI_DEFAULT_KEY_ENV]}`, "content-type": "application/json", accept: "application/json" };
  const ac = new AbortController();
  // the SDK's User-Agent too (not compared on adoption: the adapter sets the same constant)
  const response = fetch(url, { method: "POST", headers: { ...headers, "user-agent": OPENAI_USER_AGENT }, body, signal: ac.signal });
  // an early request nobody adopts must not be an unhandled rejection
  response.catch(() => {});
  offerEarlyRequest({
    method: "POST",
    url,
    body,
    headers,
    response,
    abort: () => ac.abort(),
    onMismatch: (field) => process.stderr.write(`airlock: WARNING: provider: the early request was not adopted: its ${field} differed from the provider's first request; it was aborted and the provider's own request sent\n`),
  });
  return true;
}
