/**
 * @module config/claude-settings
 * Claude Code's settings files, read in one place: which files (`~/.claude/settings.json`, then the
 * workspace's `.claude/settings.json` and `.claude/settings.local.json`), reading one as a JSON object,
 * and the `hooks` block as airlock's hook groups, each command tagged with where it came from. The
 * `permissions` block is read from the same objects by gate/rules/start.ts.
 */
import { readRegularFile } from "./paths.ts";
import path from "node:path";
import { AirlockError } from "../errors.ts";
import { HOOK_EVENTS, type HookCommand, type HookEvent, type HookMatcher } from "./schema.ts";

/** One Claude Code settings file airlock reads, and the folder its `/path` rules are relative to. */
export interface ClaudeSettingsFile {
  file: string;
  /** Claude Code: a `/path` rule is relative to the settings source (project files: the project folder; user file: `~/.claude`). */
  base: string;
  /**
   * `project` files live in the workspace, which the model can write: their `allow` rules are never applied
   * (a model that wrote `.claude/settings.local.json` would loosen its own next run), their `ask` and deny are;
   * their `hooks` run only in a folder the person trusted (`airlock trust`), and then confined like the model's shell.
   */
  scope: "user" | "project";
}

/**
 * The settings files, in Claude Code's order (user, project, project-local):
 * `~/.claude/settings.json`, `<workspace>/.claude/settings.json`, `<workspace>/.claude/settings.local.json`.
 */
export function claudeSettingsFiles(home: string, workspace: string): ClaudeSettingsFile[] {
  return [
    { file: path.join(home, ".claude", "settings.json"), base: path.join(home, ".claude"), scope: "user" },
    { file: path.join(workspace, ".claude", "settings.json"), base: workspace, scope: "project" },
    { file: path.join(workspace, ".claude", "settings.local.json"), base: workspace, scope: "project" },
  ];
}

/** The largest Claude Code settings file read, bytes (real ones are a few KiB). */
export const MAX_SETTINGS_BYTES = 1 << 20;

/**
 * Reads one settings file as a JSON object: the one reader of Claude Code's settings files.
 * @param what the switch that made airlock read it, for messages (`permissions.import_claude_settings`)
 * @returns the object, or null when the file (or its folder) does not exist
 * @throws AirlockError `config_invalid` when it exists but cannot be read (not a regular file — a FIFO, a device, a
 *   folder, a kernel pseudo file —, over {@link MAX_SETTINGS_BYTES}, no permission), is not JSON, or is not a JSON object
 *   (the message names the file, the reason and the fix, never the file's content).
 */
export function readSettingsFile(file: string, what: string): Record<string, unknown> | null {
  let text: string;
  try {
    // opened without blocking (config/paths.ts): a project's file is in a workspace the model writes, and a FIFO
    // there would freeze the server's thread in open(2); it is refused as not a regular file
    // and at most MAX_SETTINGS_BYTES, checked before the read: a sparse file of gigabytes (one `truncate` away for
    // the model) would have the serving thread read and decode all of it
    text = readRegularFile(file, { maxBytes: MAX_SETTINGS_BYTES }).toString("utf8");
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") return null;
    // readRegularFile's messages start with their code (`ENOTREG: …`, `EFBIG: …`): said in words here instead
    const message = (e as Error).message;
    const reason = code !== undefined && message.startsWith(`${code}: `) ? message.slice(code.length + 2) : message;
    throw new AirlockError("config_invalid", `${file}: cannot be read for ${what}: ${reason}; remove or fix that file, or set ${what}: false`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    // never the parser's message: it quotes the text it stopped at, and the file may be a link (written by
    // the model, in a workspace) to a secret only airlock can read, such as its approver token
    throw new AirlockError("config_invalid", `${file}: not JSON; fix it or set ${what}: false`);
  }
  if (typeof json !== "object" || json === null || Array.isArray(json)) throw new AirlockError("config_invalid", `${file}: not a JSON object`);
  return json as Record<string, unknown>;
}

/**
 * Where a hook command came from. `config`: airlock.yaml or a recipe (the default when absent);
 * `user-settings`: `~/.claude/settings.json`; `project-settings`: the workspace's `.claude/settings*.json`.
 * Set by airlock when it imports a settings file, never read from airlock.yaml (its schema is strict):
 * the launch of a hook chooses its confinement from it (gate/inspectors/hooks.ts).
 */
export type HookSource = "config" | "user-settings" | "project-settings";

/** A hook command as it runs: the config's entry plus the {@link HookSource} it was imported from. */
export type SourcedHookCommand = HookCommand & { readonly source?: HookSource };

/** The source of a hook command: its `source` tag, `config` when it has none (airlock.yaml, recipes). */
export function hookSource(h: HookCommand): HookSource {
  const s = (h as SourcedHookCommand).source;
  return s === "user-settings" || s === "project-settings" ? s : "config";
}

/** The handler fields airlock honours (Claude Code's hooks reference: `type`, `command`, `timeout` in seconds). */
const HONOURED_HANDLER_FIELDS = new Set(["type", "command", "timeout"]);
/** Claude Code's default hook timeout, seconds (its hooks reference; airlock's schema default too). */
const DEFAULT_TIMEOUT_S = 60;

/** The hook groups of one or more settings files, per event, and what was not taken from them. */
export interface SettingsHooks {
  /** Groups per event airlock fires, in file order; each command tagged with its source. */
  groups: Record<HookEvent, HookMatcher[]>;
  /** One line per event, hook type or field not honoured: `file: hooks.Event[0].hooks[1].async: …`. */
  warnings: string[];
  /** The files whose `hooks` were read. */
  read: string[];
}

/** Empty groups for every event. */
export function noHookGroups(): Record<HookEvent, HookMatcher[]> {
  return Object.fromEntries(HOOK_EVENTS.map((e) => [e, []])) as unknown as Record<HookEvent, HookMatcher[]>;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * The `hooks` block of one settings object in Claude Code's shape
 * (`{"<Event>": [{"matcher": "…", "hooks": [{"type": "command", "command": "…", "timeout": N}]}]}`,
 * Claude Code's hooks reference, "Configuration"), as airlock's hook groups tagged `source`.
 * Not honoured, each one WARNING line naming file, event and field (never silently dropped): an event
 * airlock does not fire (`PermissionRequest`, `PostToolUseFailure`, `SubagentStart`, unknown names) — its
 * hooks are not run; a hook type other than `command` (`prompt`, `agent`, `http` …) — not run; a handler
 * field other than `type`, `command`, `timeout` (`async`, …) — the hook runs without it (synchronously);
 * a group key other than `matcher`, `hooks`; `disableAllHooks`.
 * @throws AirlockError `config_invalid` when a hook airlock would run is malformed (`hooks` not an object, an
 *   event not a list, a group without a `hooks` list, a command that is not a non-empty string, a timeout that
 *   is not a positive number, a matcher that is not a string): a guard the person meant to run must not be skipped.
 */
export function parseSettingsHooks(file: string, settings: Record<string, unknown>, source: Exclude<HookSource, "config">): { groups: Record<HookEvent, HookMatcher[]>; warnings: string[] } {
  const groups = noHookGroups();
  const warnings: string[] = [];
  if (settings.disableAllHooks !== undefined) {
    warnings.push(`${file}: disableAllHooks is not honoured (airlock runs the hooks it imports; turn hooks.import_claude_settings off instead)`);
  }
  const hooks = settings.hooks;
  if (hooks === undefined) return { groups, warnings };
  const bad = (where: string, why: string) =>
    new AirlockError("config_invalid", `${file}: ${where}: ${why}; fix it, or set hooks.import_claude_settings: false`, { issues: [`${file}: ${where}: ${why}`] });
  if (!isObject(hooks)) throw bad("hooks", "expected an object of events");
  for (const [event, list] of Object.entries(hooks)) {
    const known = (HOOK_EVENTS as readonly string[]).includes(event);
    if (!Array.isArray(list)) throw bad(`hooks.${event}`, "expected a list of matcher groups");
    if (!known) {
      const n = list.reduce((k: number, g) => k + (isObject(g) && Array.isArray(g.hooks) ? g.hooks.length : 0), 0);
      warnings.push(`${file}: hooks.${event}: airlock does not fire the ${event} event; its ${n} hook(s) are not run (airlock fires ${HOOK_EVENTS.join(", ")})`);
      continue;
    }
    list.forEach((g, gi) => {
      const at = `hooks.${event}[${gi}]`;
      if (!isObject(g)) throw bad(at, "expected an object with matcher and hooks");
      for (const k of Object.keys(g)) if (k !== "matcher" && k !== "hooks") warnings.push(`${file}: ${at}.${k}: not a field airlock knows; ignored`);
      if (g.matcher !== undefined && typeof g.matcher !== "string") throw bad(`${at}.matcher`, "expected a string (a regular expression)");
      if (!Array.isArray(g.hooks)) throw bad(`${at}.hooks`, "expected a list of hooks");
      const commands: HookCommand[] = [];
      g.hooks.forEach((h, hi) => {
        const hat = `${at}.hooks[${hi}]`;
        if (!isObject(h)) throw bad(hat, "expected an object with type and command");
        if (h.type !== "command") {
          warnings.push(`${file}: ${hat}.type: hooks of type ${JSON.stringify(h.type)} are not run (airlock runs only type "command")`);
          return;
        }
        if (typeof h.command !== "string" || h.command.trim() === "") throw bad(`${hat}.command`, "expected a non-empty string");
        if (h.timeout !== undefined && (typeof h.timeout !== "number" || !(h.timeout > 0) || !Number.isFinite(h.timeout))) throw bad(`${hat}.timeout`, "expected a positive number of seconds");
        for (const k of Object.keys(h)) {
          if (!HONOURED_HANDLER_FIELDS.has(k)) warnings.push(`${file}: ${hat}.${k}: not honoured by airlock; the hook runs without it${k === "async" ? " (synchronously, its answer awaited)" : ""}`);
        }
        const cmd: SourcedHookCommand = { type: "command", command: h.command, timeout: typeof h.timeout === "number" ? h.timeout : DEFAULT_TIMEOUT_S, source };
        commands.push(cmd);
      });
      if (commands.length) groups[event as HookEvent].push({ matcher: typeof g.matcher === "string" ? g.matcher : "", hooks: commands });
    });
  }
  return { groups, warnings };
}

/**
 * Reads the `hooks` of `files` (missing files are skipped) and joins their groups per event, in file order.
 * Every command is tagged `user-settings` or `project-settings` by its file's scope.
 * @throws AirlockError `config_invalid` (see {@link readSettingsFile}, {@link parseSettingsHooks}).
 */
export function importSettingsHooks(files: readonly ClaudeSettingsFile[]): SettingsHooks {
  const out: SettingsHooks = { groups: noHookGroups(), warnings: [], read: [] };
  for (const f of files) {
    const json = readSettingsFile(f.file, "hooks.import_claude_settings");
    if (!json || (json.hooks === undefined && json.disableAllHooks === undefined)) continue;
    const one = parseSettingsHooks(f.file, json, f.scope === "user" ? "user-settings" : "project-settings");
    out.read.push(f.file);
    out.warnings.push(...one.warnings);
    for (const e of HOOK_EVENTS) out.groups[e].push(...one.groups[e]);
  }
  return out;
}

/**
 * The hooks of the user's `~/.claude/settings.json` under `home` (gate/rules/start.ts `rulesHome`), tagged
 * `user-settings`; their warnings are the caller's to say. They run in every workspace, trusted or not.
 * @throws AirlockError `config_invalid` (see {@link importSettingsHooks}).
 */
export function userSettingsHooks(home: string): SettingsHooks {
  return importSettingsHooks(claudeSettingsFiles(home, home).filter((f) => f.scope === "user"));
}

/** `true` when `groups` holds at least one hook. */
export function hasHooks(groups: Record<HookEvent, HookMatcher[]>): boolean {
  return HOOK_EVENTS.some((e) => groups[e].length > 0);
}

/** The hooks a session tree imports from Claude Code's settings files, and what the person is told about them. */
export interface TreeSettingsHooks {
  /** The user's groups, then (in a trusted folder) the workspace's, per event, in file order. */
  groups: Record<HookEvent, HookMatcher[]>;
  /** Lines for the person: the workspace files' events, hook types and fields not honoured (trusted), or one {@link untrustedHooksNote} per workspace file with hooks (untrusted). The user file's warnings are not here: they are said where it is read. */
  notes: string[];
  /** The workspace's settings files whose `hooks` are not run because no trusted folder holds the workspace (empty when trusted). */
  untrusted: string[];
}

/** The note for a workspace settings file whose hooks are not run: the folder is not trusted, and the `airlock trust` that would run them. */
export function untrustedHooksNote(file: string, workspace: string): string {
  return `${file}: its hooks are NOT run: ${workspace} is not a trusted folder (a repository's hooks are code from that repository). If you trust it, run: airlock trust ${workspace}`;
}

/**
 * The hooks a session tree rooted in `workspace` imports (`hooks.import_claude_settings`): the user's settings
 * hooks (`user`, read with {@link importSettingsHooks}), then those of the workspace's `.claude/settings.json` and
 * `.claude/settings.local.json` when `trusted` (a trusted folder holds the workspace: store/trust.ts). An untrusted
 * workspace's files are only read to say that their hooks are not run. The one import `airlock run` (runtime.ts) and
 * `airlock policy explain` (cli/policy.ts) both make.
 * @param home the folder holding `.claude/settings.json` of the user (gate/rules/start.ts `rulesHome`), for the files' list.
 * @throws AirlockError `config_invalid`: a workspace settings file that cannot be read as a regular file (trusted or
 *   not: a FIFO, a device, a folder, a kernel pseudo file is refused, not reported as hooks trust would run), or a
 *   trusted one that is not valid ({@link readSettingsFile}, {@link parseSettingsHooks}).
 */
export function treeSettingsHooks(user: SettingsHooks, home: string, workspace: string, trusted: boolean): TreeSettingsHooks {
  const [, ...project] = claudeSettingsFiles(home, workspace);
  const groups = structuredClone(user.groups);
  if (trusted) {
    const got = importSettingsHooks(project);
    for (const e of HOOK_EVENTS) groups[e].push(...got.groups[e]);
    return { groups, notes: got.warnings, untrusted: [] };
  }
  const untrusted: string[] = [];
  for (const f of project) {
    const json = readSettingsFile(f.file, "hooks.import_claude_settings");
    if (json && json.hooks !== undefined) untrusted.push(f.file);
  }
  return { groups, notes: untrusted.map((f) => untrustedHooksNote(f, workspace)), untrusted };
}
