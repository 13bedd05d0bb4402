/**
 * @module config/load
 * Reads `airlock.yaml` (SPEC §3): YAML → zod-validated `Config` → deeply frozen. A file in the plain block
 * subset is read by `Bun.YAML` (`simple-yaml.ts`), any other, and every message's positions, by the `yaml`
 * package, loaded on first use. Every failing key
 * is reported at once, with its path, what was expected and what was found; YAML syntax errors
 * carry line and column. Also merges recipe/CLI overrides (`mergeConfig`) and formats zod issues
 * for the other boundaries (`formatZodIssues`: recipes, HTTP 400s).
 */
import { dirname, join, resolve } from "node:path";
import type { Node as YamlNode } from "yaml";
import { z } from "zod";
import { AirlockError } from "../errors.ts";
import { Config, HOOK_EVENTS, HooksConfig, Mode, ProviderConfig, SandboxPolicyName } from "./schema.ts";
import { dataDirConfigCheck, MAX_CONFIG_FILE_BYTES, readRegularFile } from "./paths.ts";
import { parseSimpleYaml } from "./simple-yaml.ts";

/**
 * The `yaml` package, loaded on first use: a config in the plain block subset never needs it
 * (`simple-yaml.ts`). `require` keeps `parseYaml` synchronous; the bundler evaluates the package only then.
 */
function yamlPackage(): typeof import("yaml") {
  return require("yaml") as typeof import("yaml");
}

/** The file name looked up in the data dir when `--config` is not given. */
export const CONFIG_FILE_NAME = "airlock.yaml";

/** What `loadConfig` returns: the frozen config, the file it came from (null: defaults) and the directory relative paths in it resolve against. */
export interface LoadedConfig {
  config: Readonly<Config>;
  /** Absolute path of the file read, or null when no file existed and the defaults apply. */
  path: string | null;
  /** Directory of the config file (relative paths such as `provider.script` resolve against it); the data dir when there is no file. */
  dir: string;
  /** The text parsed (the file read as UTF-8), or null when no file existed and the defaults apply. */
  text: string | null;
}

/** A position in a source file, 1-based. */
export interface SourcePos {
  line: number;
  col: number;
}

/** Maps a key path to where it is in the source: the value's position, or with `at: "key"` the key's. Nearest existing ancestor when the path is absent. */
export type Locate = (path: readonly PropertyKey[], at?: "key" | "value") => SourcePos | undefined;

export interface FormatIssuesOptions {
  /** Maps an issue path to its position in the source (adds ` (line L, column C)`). */
  locate?: Locate;
  /** The schema the issues came from; enables "did you mean" hints for unknown keys. */
  schema?: z.ZodType;
}

/**
 * Loads and validates the configuration.
 *
 * @param opts.configPath `--config` value (absolute or relative to the cwd). A missing file is an error.
 * @param opts.dataDir the resolved data dir; `<dataDir>/airlock.yaml` is read when `configPath` is not given, and
 *   its absence means the defaults.
 * @param opts.text the file's text as already read (`airlock run`'s early request keeps the run on the text it was
 *   sent with): parsed instead of reading the file again.
 * @returns `{config, path, dir, text}`; `config` is deeply frozen.
 * @throws AirlockError `config_invalid` when the file cannot be read, is not valid YAML (message gives line:column),
 *   or fails validation (message lists every failing key path with what was expected and what was found).
 */
export function loadConfig(opts: { configPath?: string; dataDir: string; text?: string }): LoadedConfig {
  const explicit = opts.configPath !== undefined && opts.configPath !== "";
  const path = explicit ? resolve(opts.configPath!) : join(opts.dataDir, CONFIG_FILE_NAME);
  const shown = explicit ? opts.configPath! : path;
  let text: string;
  try {
    // the data dir's own file only when no other user may change it (config/paths.ts dataDirConfigCheck); --config is the user's choice
    text = opts.text ?? readRegularFile(path, explicit ? { maxBytes: MAX_CONFIG_FILE_BYTES } : { maxBytes: MAX_CONFIG_FILE_BYTES, check: (_fd, st) => dataDirConfigCheck(path, st) }).toString("utf8");
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    if (err.code === "ENOENT" && !explicit) {
      return { config: deepFreeze(Config.parse({})), path: null, dir: opts.dataDir, text: null };
    }
    if (err.code === "ENOENT") {
      throw new AirlockError("config_invalid", `config file ${shown} (given by --config) does not exist; create it or drop --config to use ${join(opts.dataDir, CONFIG_FILE_NAME)}`, { path });
    }
    if (err.code === "EISDIR") {
      throw new AirlockError("config_invalid", `config file ${shown} is a directory; point --config at a YAML file`, { path });
    }
    if (err.code === "EOWNER" || err.code === "EWRITABLE") {
      const { uid, mode } = err as NodeJS.ErrnoException & { uid?: number; mode?: number };
      const why = err.code === "EOWNER" ? `belongs to uid ${uid}, not to the user airlock runs as (uid ${process.geteuid?.()}) or root` : `is writable by its group or others (mode 0${(mode ?? 0).toString(8)})`;
      throw new AirlockError("config_invalid", `config file ${shown} ${why}: another user could change the hooks and MCP servers airlock runs as you; check what it says, then make it yours with mode 0600 (cp it to a new file and replace it), or remove it`, { path });
    }
    if (err.code === "ENOTREG") {
      throw new AirlockError("config_invalid", `config file ${shown} is not a regular file (a FIFO, a device or a socket); point --config at a YAML file`, { path });
    }
    if (err.code === "EFBIG") {
      throw new AirlockError("config_invalid", `config file ${shown} is larger than ${MAX_CONFIG_FILE_BYTES} bytes (1 MiB), the most a config may hold; point --config at the YAML file you meant`, { path });
    }
    throw new AirlockError("config_invalid", `cannot read config file ${shown}: ${err.message}; check its permissions`, { path });
  }
  const config = parseConfigText(text, shown);
  return { config, path, dir: dirname(path), text };
}

/**
 * Parses and validates the text of an `airlock.yaml`. An empty document means the defaults.
 * @param sourceName the name used in messages (usually the file path as the user gave it).
 * @throws AirlockError `config_invalid` (see `loadConfig`).
 */
export function parseConfigText(text: string, sourceName: string): Readonly<Config> {
  // the plain block subset is read natively; anything else (and every message's positions) by the `yaml` package
  const fast = parseSimpleYaml(text);
  const value = fast ? fast.value : parseYaml(text, sourceName, "config_invalid").value;
  if (value !== null && value !== undefined && !isPlainObject(value)) {
    throw new AirlockError("config_invalid", `${sourceName}: expected a mapping of keys at the top level, got ${describeValue(value)}; see docs/configuration.md`);
  }
  const result = Config.safeParse(value ?? {}, { reportInput: true });
  if (!result.success) {
    const { locate } = parseYaml(text, sourceName, "config_invalid");
    const lines = formatZodIssues(result.error.issues, sourceName, { locate, schema: Config });
    throw new AirlockError("config_invalid", invalidMessage(sourceName, lines), { issues: lines });
  }
  return deepFreeze(result.data);
}

/**
 * Parses YAML text, turning syntax errors into an AirlockError with `source:line:col`.
 * @returns the plain JS value and a `locate(path)` function mapping key paths to source positions.
 * @throws AirlockError with `code` (e.g. `config_invalid`, `recipe_invalid`) on a syntax error.
 */
export function parseYaml(
  text: string,
  sourceName: string,
  code: "config_invalid" | "recipe_invalid" | "bad_request" = "config_invalid",
): { value: unknown; locate: Locate } {
  const { LineCounter, parseDocument, isMap, isSeq, isPair, isScalar } = yamlPackage();
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true });
  if (doc.errors.length > 0) {
    const lines = doc.errors.map((err) => {
      const pos = lineCounter.linePos(err.pos[0]);
      const srcLine = text.split(/\r?\n/)[pos.line - 1] ?? "";
      const msg = err.message.split("\n")[0]!.replace(/ at line \d+, column \d+:?$/, "");
      return `${sourceName}:${pos.line}:${pos.col}: YAML syntax error: ${msg}\n    ${srcLine}\n    ${" ".repeat(Math.max(0, pos.col - 1))}^`;
    });
    throw new AirlockError(code, `${lines.join("\n")}\nFix the YAML syntax at the position shown and run again.`);
  }
  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: 100 });
  } catch (e) {
    throw new AirlockError(code, `${sourceName}: ${(e as Error).message}`);
  }
  const locate: Locate = (path, at = "value") => {
    let node: unknown = doc.contents;
    let found: YamlNode | undefined = isNode(node) ? node : undefined;
    for (const [i, seg] of path.entries()) {
      if (isMap(node)) {
        const pair = node.items.find((p) => isPair(p) && (isScalar(p.key) ? p.key.value : p.key) === seg);
        if (!pair) break;
        node = pair.value;
        const keyNode = pair.key;
        const wantKey = at === "key" && i === path.length - 1;
        found = !wantKey && isNode(pair.value) ? pair.value : isNode(keyNode) ? keyNode : found;
      } else if (isSeq(node) && typeof seg === "number") {
        node = node.items[seg];
        if (!isNode(node)) break;
        found = node;
      } else break;
    }
    const offset = found?.range?.[0];
    return offset === undefined ? undefined : lineCounter.linePos(offset);
  };
  return { value, locate };
}

function isNode(n: unknown): n is YamlNode {
  return typeof n === "object" && n !== null && "range" in n;
}

function invalidMessage(sourceName: string, lines: string[]): string {
  const n = lines.length;
  return `${sourceName} is invalid (${n} problem${n === 1 ? "" : "s"}):\n${lines.map((l) => `  ${l}`).join("\n")}\nFix ${n === 1 ? "this key" : "these keys"} (every key is described in docs/configuration.md) and run again.`;
}

/**
 * Formats zod issues as one line each: `<source>: <key.path>: <what was expected>, got <what was found>`,
 * e.g. `airlock.yaml: limits.max_concurrent_calls: expected number, got "eight"` or
 * `airlock.yaml: unknown key "foo" at provider`. Pass `{reportInput: true}` to `safeParse` so the
 * found value can be shown.
 * @returns one line per problem (an issue naming several unknown keys yields one line per key), in file order
 *   when `opts.locate` is given, else in zod's order.
 */
export function formatZodIssues(issues: readonly z.core.$ZodIssue[], sourceName: string, opts: FormatIssuesOptions = {}): string[] {
  const out: { text: string; pos?: SourcePos }[] = [];
  let last: SourcePos | undefined;
  const at = (path: readonly PropertyKey[], which: "key" | "value" = "value") => {
    last = opts.locate?.(path, which);
    return last ? ` (line ${last.line}, column ${last.col})` : "";
  };
  const push = (text: string) => out.push({ text, pos: last });
  const prefix = sourceName ? `${sourceName}: ` : "";
  for (const issue of issues) {
    const path = issue.path as PropertyKey[];
    const input = (issue as { input?: unknown }).input;
    switch (issue.code) {
      case "unrecognized_keys": {
        const where = path.length === 0 ? "the top level" : formatPath(path);
        const known = opts.schema ? knownKeysAt(opts.schema, path) : [];
        for (const key of issue.keys) {
          const hint = suggest(key, known);
          const allowed = known.length > 0 ? `; allowed keys: ${known.join(", ")}` : "";
          push(`${prefix}unknown key "${key}" at ${where}${hint ? ` (did you mean "${hint}"?)` : allowed}${at([...path, key], "key")}`);
        }
        break;
      }
      case "invalid_type": {
        const received = /received (\w+)$/.exec(issue.message)?.[1];
        const missing = input === undefined && (received === undefined || received === "undefined");
        const msg = missing
          ? `required key is missing (expected ${typeName(issue.expected)})`
          : `expected ${typeName(issue.expected)}, got ${input !== undefined ? describeValue(input) : received}`;
        push(`${prefix}${formatPath(path)}: ${msg}${at(path)}`);
        break;
      }
      case "invalid_value": {
        const values = issue.values.map((v) => JSON.stringify(v));
        const expected = values.length === 1 ? values[0] : `one of ${values.join(" | ")}`;
        push(`${prefix}${formatPath(path)}: expected ${expected}, got ${describeValue(input)}${at(path)}`);
        break;
      }
      case "too_small":
      case "too_big": {
        push(`${prefix}${formatPath(path)}: ${boundText(issue)}, got ${describeValue(input)}${at(path)}`);
        break;
      }
      case "invalid_format": {
        const expected = issue.format === "url" ? "expected a URL (e.g. http://127.0.0.1:11434/v1)" : issue.message.replace(/^Invalid string: /, "");
        push(`${prefix}${formatPath(path)}: ${expected}, got ${describeValue(input)}${at(path)}`);
        break;
      }
      case "invalid_key": {
        const key = path[path.length - 1];
        const parent = path.slice(0, -1);
        const why = issue.issues.map((i) => i.message).join("; ");
        push(`${prefix}invalid key ${JSON.stringify(String(key))} at ${parent.length ? formatPath(parent) : "the top level"}: ${why}${at(path, "key")}`);
        break;
      }
      default: {
        // A refinement's (`custom`) input is the whole object it refined, not the value at its path, so its
        // message must say what was found itself; appending that object would read ", got a mapping".
        const got = input === undefined || issue.code === "custom" ? "" : `, got ${describeValue(input)}`;
        push(`${prefix}${path.length ? `${formatPath(path)}: ` : ""}${lowerFirst(issue.message)}${got}${at(path)}`);
      }
    }
  }
  // With positions, report in file order (stable: issues at one place keep zod's order).
  if (opts.locate) out.sort((a, b) => (a.pos?.line ?? Infinity) - (b.pos?.line ?? Infinity) || (a.pos?.col ?? 0) - (b.pos?.col ?? 0));
  return out.map((o) => o.text);
}

/** `["hooks","PreToolUse",0,"matcher"]` → `hooks.PreToolUse[0].matcher`; odd keys are quoted: `tools["a.b"]`. */
export function formatPath(path: readonly PropertyKey[]): string {
  let s = "";
  for (const seg of path) {
    if (typeof seg === "number") s += `[${seg}]`;
    else {
      const k = String(seg);
      s += /^[A-Za-z0-9_-]+$/.test(k) ? (s ? `.${k}` : k) : `[${JSON.stringify(k)}]`;
    }
  }
  return s || "(top level)";
}

function boundText(issue: { code: "too_small" | "too_big"; origin: string; inclusive?: boolean } & ({ minimum: number | bigint } | { maximum: number | bigint })): string {
  const small = issue.code === "too_small";
  const bound = "minimum" in issue ? issue.minimum : issue.maximum;
  const inclusive = issue.inclusive !== false;
  switch (issue.origin) {
    case "number":
    case "int":
    case "bigint":
      return `expected a number ${small ? (inclusive ? ">=" : ">") : inclusive ? "<=" : "<"} ${bound}`;
    case "array":
    case "set":
      return `expected ${small ? "at least" : "at most"} ${bound} item${bound === 1 ? "" : "s"}`;
    case "string":
      return `expected ${small ? "at least" : "at most"} ${bound} character${bound === 1 ? "" : "s"}`;
    default:
      return `expected ${issue.origin} ${small ? ">=" : "<="} ${bound}`;
  }
}

function typeName(t: string): string {
  if (t === "object") return "a mapping";
  if (t === "array") return "a list";
  return t;
}

/** Short, user-facing rendering of a found value: `"eight"`, `3`, `null`, `a list`, `a mapping`. */
export function describeValue(v: unknown): string {
  if (v === undefined) return "nothing";
  if (v === null) return "null";
  if (Array.isArray(v)) return v.length === 0 ? "an empty list" : `a list of ${v.length} item${v.length === 1 ? "" : "s"}`;
  if (typeof v === "object") return "a mapping";
  if (typeof v === "string") return JSON.stringify(v.length > 60 ? `${v.slice(0, 57)}...` : v);
  return String(v);
}

function lowerFirst(s: string): string {
  return s ? s[0]!.toLowerCase() + s.slice(1) : s;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Keys of the (strict) object schema found at `path` inside `schema` (looking through defaults, optionals, records, arrays). */
function knownKeysAt(schema: z.ZodType, path: readonly PropertyKey[]): string[] {
  type Def = { type: string; innerType?: Def; shape?: Record<string, unknown>; valueType?: Def; element?: Def; in?: Def };
  const defOf = (s: unknown): Def | undefined => (s as { _zod?: { def?: Def } })?._zod?.def;
  const unwrap = (d: Def | undefined): Def | undefined => {
    while (d && (d.type === "default" || d.type === "optional" || d.type === "nullable" || d.type === "prefault" || d.type === "pipe" || d.type === "readonly")) {
      d = d.type === "pipe" ? defOf(d.in) : defOf(d.innerType);
    }
    return d;
  };
  let d = unwrap(defOf(schema));
  for (const seg of path) {
    if (!d) return [];
    if (d.type === "object") d = unwrap(defOf(d.shape?.[String(seg)]));
    else if (d.type === "record") d = unwrap(defOf(d.valueType));
    else if (d.type === "array") d = unwrap(defOf(d.element));
    else return [];
  }
  return d?.type === "object" && d.shape ? Object.keys(d.shape) : [];
}

/** The known key closest to `key` by edit distance (at most 2 edits, or a case-only difference), if any. */
function suggest(key: string, known: string[]): string | undefined {
  let best: string | undefined;
  let bestD = Infinity;
  for (const k of known) {
    const d = k.toLowerCase() === key.toLowerCase() ? 0 : editDistance(key, k);
    if (d < bestD) [best, bestD] = [k, d];
  }
  return bestD <= Math.min(2, Math.max(1, Math.floor(key.length / 2))) ? best : undefined;
}

function editDistance(a: string, b: string): number {
  const prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let diag = prev[0]!;
    prev[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const tmp = prev[j]!;
      prev[j] = Math.min(prev[j]! + 1, prev[j - 1]! + 1, diag + (a[i - 1] === b[j - 1] ? 0 : 1));
      diag = tmp;
    }
  }
  return prev[b.length]!;
}

/** Freezes a value and everything reachable from it; returns it typed as readonly. */
export function deepFreeze<T>(value: T): Readonly<T> {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

/**
 * The settings a recipe or the command line may override. `provider` is validated as a provider
 * block; `hooks` as a hooks block. Unknown keys are an error.
 */
export const ConfigOverrides = z.strictObject({
  mode: Mode.optional(),
  sandbox: SandboxPolicyName.optional(),
  provider: ProviderConfig.optional(),
  hooks: HooksConfig.optional(),
});
export type ConfigOverrides = z.input<typeof ConfigOverrides>;

/**
 * Applies overrides (from a recipe or CLI flags) to a loaded config and validates the result again.
 *
 * Rules: `mode` and `sandbox` replace. `provider`: when it names a different provider than the base,
 * it replaces the whole block (a base `base_url` for openai must not leak to anthropic); otherwise its
 * keys are laid over the base block. The hook groups of every event are **appended** to the base's, and
 * `hooks.import_claude_settings` can only be turned on: a recipe can add guards, never remove the user's own.
 *
 * @param sourceName used in error messages (e.g. the recipe path or `command line`).
 * @returns a new deeply frozen Config; `base` is not changed.
 * @throws AirlockError `config_invalid` listing every failing key path.
 */
export function mergeConfig(base: Readonly<Config>, overrides: ConfigOverrides, sourceName = "overrides"): Readonly<Config> {
  const checked = ConfigOverrides.safeParse(overrides, { reportInput: true });
  if (!checked.success) {
    const lines = formatZodIssues(checked.error.issues, sourceName, { schema: ConfigOverrides });
    throw new AirlockError("config_invalid", invalidMessage(sourceName, lines), { issues: lines });
  }
  const raw = overrides as Record<string, unknown>;
  const merged: Record<string, unknown> = structuredClone(base) as Record<string, unknown>;
  if (overrides.mode !== undefined) merged.mode = overrides.mode;
  if (overrides.sandbox !== undefined) merged.sandbox = overrides.sandbox;
  if (raw.provider !== undefined) {
    const p = raw.provider as Record<string, unknown>;
    const sameProvider = p.name === undefined || p.name === base.provider.name;
    merged.provider = sameProvider ? { ...base.provider, ...stripUndefined(p) } : stripUndefined(p);
  }
  if (checked.data.hooks !== undefined) {
    const add = checked.data.hooks;
    const hooks: Record<string, unknown> = { ...base.hooks, import_claude_settings: base.hooks.import_claude_settings || add.import_claude_settings };
    for (const event of HOOK_EVENTS) hooks[event] = [...base.hooks[event], ...add[event]];
    merged.hooks = hooks;
  }
  const result = Config.safeParse(merged, { reportInput: true });
  if (!result.success) {
    const lines = formatZodIssues(result.error.issues, sourceName, { schema: Config });
    throw new AirlockError("config_invalid", invalidMessage(sourceName, lines), { issues: lines });
  }
  return deepFreeze(result.data);
}

function stripUndefined(o: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));
}
