/**
 * @module config/schema
 * The zod schema of `airlock.yaml` (SPEC §3): the single source of truth for keys, types and
 * defaults. Every object is strict (unknown keys are an error). `Config.parse({})` yields the defaults.
 */
import { z } from "zod";

export const Mode = z.enum(["autonomous", "smart", "approve", "chat"]);
export type Mode = z.infer<typeof Mode>;

export const SandboxPolicyName = z.enum(["read-only", "workspace-write", "danger-full-access"]);
export type SandboxPolicyName = z.infer<typeof SandboxPolicyName>;

export const Privacy = z.enum(["public", "private"]);
export type Privacy = z.infer<typeof Privacy>;

export const ProviderName = z.enum(["openai", "openai-responses", "anthropic", "scripted"]);
export type ProviderName = z.infer<typeof ProviderName>;

export const ProviderConfig = z.strictObject({
  name: ProviderName.default("scripted"),
  model: z.string().min(1).optional(),
  base_url: z.url().optional(),
  /** Name of the environment variable holding the API key; the key itself is never stored. */
  api_key_env: z.string().min(1).optional(),
  /** scripted provider only: path of the YAML file of model turns (relative to the config file's folder; in a recipe, the recipe's). Checked at start (`Runtime.checkProvider`). */
  script: z.string().min(1).optional(),
  /** Retries for 429/5xx, with exponential backoff. */
  max_retries: z.number().int().min(0).max(10).default(3),
  /** Request timeout in seconds. */
  timeout_s: z.number().positive().default(600),
  /** anthropic only: extended thinking with this budget, tokens (Anthropic's minimum is 1024). Absent = thinking off. */
  thinking_budget_tokens: z.number().int().min(1024).optional(),
  /** anthropic only: prompt-cache breakpoints on the system prompt and the tools. Absent = true. */
  prompt_caching: z.boolean().optional(),
  /** openai only: send DeepSeek's `reasoning_content` back with tool-calling turns; absent = only when `base_url` is on deepseek.com. */
  replay_reasoning_content: z.boolean().optional(),
  /**
   * Input tokens the model accepts (its context window less what it keeps for output). Over it, the
   * history sent shrinks (agent/compact.ts). Absent = a default for the model's family (`contextTokensFor`).
   */
  context_tokens: z.number().int().min(1024).optional(),
});
export type ProviderConfig = z.infer<typeof ProviderConfig>;

/** Claude Code's settings.json hook shape: `{type: command, command, timeout}` (timeout in seconds). */
export const HookCommand = z.strictObject({
  type: z.literal("command"),
  command: z.string().min(1),
  timeout: z.number().positive().default(60),
});
export type HookCommand = z.infer<typeof HookCommand>;

export const HookMatcher = z.strictObject({
  /** A regular expression tested against both the Claude Code name and airlock's name; empty/absent = all. */
  matcher: z.string().default(""),
  hooks: z.array(HookCommand).min(1),
});
export type HookMatcher = z.infer<typeof HookMatcher>;

/**
 * The hook events airlock fires, with Claude Code's names and meaning (Claude Code's hooks reference,
 * "Hook Events"): `PreToolUse` before a tool call is judged, `PostToolUse` after it ran,
 * `UserPromptSubmit` when a reply arrives, `Stop` / `SubagentStop` when a root / subagent turn would
 * end, `SessionStart` / `SessionEnd`, `Notification` when a card parks, `PreCompact` before history shrinks.
 */
export const HOOK_EVENTS = [
  "PreToolUse",
  "PostToolUse",
  "UserPromptSubmit",
  "Stop",
  "SubagentStop",
  "SessionStart",
  "SessionEnd",
  "Notification",
  "PreCompact",
] as const;
export type HookEvent = (typeof HOOK_EVENTS)[number];

const hookGroups = () => z.array(HookMatcher).default([]);

/** `hooks:` — one list of matcher groups per event (Claude Code's settings.json `hooks` shape), plus the import switch. */
export const HooksConfig = z.strictObject({
  /**
   * Also run the `hooks` of Claude Code's settings files: `~/.claude/settings.json` always; the workspace's
   * `.claude/settings.json` and `.claude/settings.local.json` only when the workspace is trusted (`airlock trust`).
   */
  import_claude_settings: z.boolean().default(false),
  PreToolUse: hookGroups(),
  PostToolUse: hookGroups(),
  UserPromptSubmit: hookGroups(),
  Stop: hookGroups(),
  SubagentStop: hookGroups(),
  SessionStart: hookGroups(),
  SessionEnd: hookGroups(),
  Notification: hookGroups(),
  PreCompact: hookGroups(),
});
export type HooksConfig = z.infer<typeof HooksConfig>;

export const Limits = z.strictObject({
  /** Permits: concurrently executing tool calls. */
  max_concurrent_calls: z.number().int().min(1).default(8),
  /** CPU deadline of one script, ms (time waiting on tools does not count). */
  script_timeout_ms: z.number().int().positive().default(30_000),
  /** Wall-clock deadline of one script, ms (includes time waiting on tools). */
  script_wall_timeout_ms: z.number().int().positive().default(600_000),
  /** WASM memory cap per script worker, MiB. */
  script_memory_mb: z.number().int().min(8).max(2048).default(64),
  /** QuickJS stack size, KiB; at most 4096 (script/protocol.ts `MAX_STACK_KB`: the QuickJS build's own stack is 5 MiB). */
  script_stack_kb: z.number().int().min(64).max(4096).default(512),
  /** Tool calls one script may make. */
  script_max_tool_calls: z.number().int().positive().default(1000),
  /** Captured console output per script, bytes. */
  script_max_log_bytes: z.number().int().positive().default(256 * 1024),
  /** Serialized return value per script, bytes. */
  script_max_result_bytes: z.number().int().positive().default(1024 * 1024),
  /** Worker threads in the script pool. */
  script_workers: z.number().int().min(1).max(64).default(2),
  shell_timeout_s: z.number().positive().default(120),
  python_timeout_s: z.number().positive().default(120),
  js_timeout_s: z.number().positive().default(600),
  /** Cap for each of stdout and stderr of a host process, bytes. */
  max_output_bytes: z.number().int().positive().default(1_048_576),
  /** Model calls in one turn before it fails with `max_iterations`. */
  max_iterations: z.number().int().positive().default(50),
  /**
   * Input + output tokens one run (`airlock run`, a scheduled run: the root and every subagent) may use,
   * as the providers report them; crossing it ends the run `failed` with `token_budget`. Absent: no limit.
   */
  max_tokens_per_run: z.number().int().positive().optional(),
  /** How often `Stop` / `SubagentStop` hooks may keep one turn going (exit 2 / `decision: "block"`) before they are not run again. */
  max_stop_continuations: z.number().int().min(0).default(5),
  /** Largest HTTP request body, bytes. */
  max_body_bytes: z.number().int().positive().default(1_048_576),
});
export type Limits = z.infer<typeof Limits>;

export const McpServerConfig = z.strictObject({
  command: z.string().min(1),
  args: z.array(z.string()).default([]),
  /** Extra environment entries for this server (added to the allow-listed environment). */
  env: z.record(z.string(), z.string()).default({}),
  /** Sandbox policy for this server's process; default: the config's `sandbox`. */
  sandbox: SandboxPolicyName.optional(),
  /** Seconds to wait for one tool call (and for start-up, unless `startup_timeout_s` is set). */
  timeout_s: z.number().positive().default(60),
  /** Seconds to wait for the server to start and list its tools; default: `timeout_s` (npx-started servers may need longer than a call). */
  startup_timeout_s: z.number().positive().optional(),
  /** Working directory and workspace of the server (writable under workspace-write), relative to airlock's workspace; default: airlock's workspace (docs/mcp.md). */
  cwd: z.string().optional(),
  /**
   * Credential paths this server may read (absolute, or `~/…`): every other entry of the credential
   * list (src/launcher/credentials.ts) stays hidden from it, as from every confined process.
   */
  credentials: z
    .array(
      z
        .string()
        .min(1)
        .refine((p) => (p.startsWith("/") || p.startsWith("~/")) && !p.split("/").includes("..") && !p.includes("\0"), {
          message: "a credential path is absolute or starts with ~/, and has no '..'",
        }),
    )
    .default([]),
});
export type McpServerConfig = z.infer<typeof McpServerConfig>;

/**
 * The extensions of airlock's own tools (`developer__shell`, `subagent__spawn` …). An MCP server's tools
 * are named `<server>__<tool>`, so a server with one of these names (in any case) would make its tools
 * look built-in: refused at start (`config_invalid`).
 */
export const RESERVED_SERVER_NAMES: readonly string[] = ["developer", "interpreter", "code_execution", "subagent"];

function refuseReservedServerNames(servers: Record<string, unknown>, ctx: z.RefinementCtx): void {
  for (const name of Object.keys(servers)) {
    if (!RESERVED_SERVER_NAMES.includes(name.toLowerCase())) continue;
    ctx.addIssue({
      code: "custom",
      path: [name],
      message: `the MCP server name "${name}" is reserved: ${RESERVED_SERVER_NAMES.join(", ")} name airlock's built-in tools, and this server's tools (${name}__…) would pass for them; rename the server`,
    });
  }
}

export const ToolPermission = z.enum(["allow", "ask", "deny"]);

/** One `permissions.tests` case: a call and the decision the gate must reach on it at start. */
export const PermissionTest = z.strictObject({
  call: z.strictObject({ tool: z.string().min(1), args: z.record(z.string(), z.unknown()).default({}) }),
  expect: ToolPermission,
});
export type PermissionTest = z.infer<typeof PermissionTest>;

/**
 * Permission rules in Claude Code's syntax (docs/permissions.md): deny > ask > allow; checked at start
 * (a malformed rule is `config_invalid`), as are the `tests` cases.
 */
export const Permissions = z.strictObject({
  allow: z.array(z.string()).default([]),
  ask: z.array(z.string()).default([]),
  deny: z.array(z.string()).default([]),
  /** Also read the `permissions` block of Claude Code's settings files (user, project, project-local). */
  import_claude_settings: z.boolean().default(false),
  tests: z.array(PermissionTest).default([]),
});
export type Permissions = z.infer<typeof Permissions>;
export const ToolConfig = z.strictObject({ permission: ToolPermission });
export type ToolConfig = z.infer<typeof ToolConfig>;

/**
 * What the model is offered (`tools.offer`): `code` — `code_execution__*` and `subagent__*`, every other
 * tool reached from a script (the shipped default); `direct` — every tool but `code_execution__*`, each
 * with its own schema; `both` — every tool. Every call is judged by the same gate whatever was offered.
 */
export const ToolOffer = z.enum(["code", "direct", "both"]);
export type ToolOffer = z.infer<typeof ToolOffer>;

/** `tools:` — `offer`, and per-tool permissions keyed by airlock tool name (`developer__shell: {permission: ask}`). */
export const ToolsConfig = z.object({ offer: ToolOffer.default("code") }).catchall(ToolConfig);
export type ToolsConfig = z.infer<typeof ToolsConfig>;
/** What the gate reads of `tools:`: an entry per tool name (`offer` is not a tool name: tool names hold `__`). */
export type ToolPermissions = Readonly<Record<string, ToolConfig | ToolOffer | undefined>>;

/** The events a notifier may be sent (docs/notify.md): a card parked or ended, a run finished, a run blocked. */
export const NOTIFY_EVENTS = ["card_parked", "card_resolved", "run_finished", "run_blocked"] as const;
export const NotifyEventName = z.enum(NOTIFY_EVENTS);
export type NotifyEventName = z.infer<typeof NotifyEventName>;

/** An environment variable's name (where a secret is read from; the config never holds the secret itself). */
const EnvName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "must be an environment variable's name");

/** An http(s) URL without a user or password in it (a secret belongs in an environment variable: `url_env`). */
const NotifyUrl = z.string().superRefine((v, ctx) => {
  let u: URL;
  try {
    u = new URL(v);
  } catch {
    ctx.addIssue({ code: "custom", message: "must be an absolute http:// or https:// URL" });
    return;
  }
  if (u.protocol !== "http:" && u.protocol !== "https:") ctx.addIssue({ code: "custom", message: "must be an http:// or https:// URL" });
  if (u.username || u.password) ctx.addIssue({ code: "custom", message: "must not hold a user or password (a literal secret); put the URL in an environment variable and name it in url_env" });
});

/** `notify.notifiers[].webhook`: POST one JSON body per event (docs/notify.md). */
export const NotifyWebhook = z
  .strictObject({
    /** The URL to POST to (for `ntfy`: the topic's URL, e.g. https://ntfy.sh/my-topic). */
    url: NotifyUrl.optional(),
    /** The environment variable holding the URL, for URLs that are secrets themselves (Slack's incoming webhooks). */
    url_env: EnvName.optional(),
    /** `json`: airlock's notification object; `ntfy`: ntfy's JSON publish shape; `slack`: an incoming webhook's `{text}`. */
    format: z.enum(["json", "ntfy", "slack"]).default("json"),
    /** Request headers whose values are read from environment variables: `{Authorization: NTFY_AUTH}`. */
    headers_env: z.record(z.string().regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/, "must be an HTTP header name"), EnvName).default({}),
    /** Retries after a network error, a 5xx or a 429 (exponential backoff), within the notifier's `timeout_s`. */
    retries: z.number().int().min(0).max(10).default(3),
    /** The first retry's wait, ms; each next one waits twice as long (a 429's Retry-After, when longer, wins). */
    retry_backoff_ms: z.number().int().positive().max(60_000).default(500),
  })
  .superRefine((w, ctx) => {
    if ((w.url === undefined) === (w.url_env === undefined)) ctx.addIssue({ code: "custom", message: "give exactly one of url and url_env" });
    if (w.url && /(^|\.)hooks\.slack\.com$/i.test(new URL(w.url).hostname)) {
      ctx.addIssue({ code: "custom", path: ["url"], message: "a Slack incoming-webhook URL is a secret: put it in an environment variable and name it in url_env" });
    }
  });
export type NotifyWebhook = z.infer<typeof NotifyWebhook>;

/** One notifier: a command or a webhook, and the events it hears about. */
export const Notifier = z
  .strictObject({
    /** Named in the log when it fails, and in `GET /health`; default `notify[N]` (N from 0). */
    name: z.string().min(1).max(64).optional(),
    /** The events sent to it; default all of them. */
    on: z.array(NotifyEventName).min(1).default([...NOTIFY_EVENTS]),
    /** Run with `/bin/sh -c`, the event's JSON on stdin, confined like a hook (docs/notify.md). */
    command: z.string().min(1).optional(),
    webhook: NotifyWebhook.optional(),
    /** Seconds one event may take (a command is killed with its process group; a webhook's attempts and waits all fit in it). */
    timeout_s: z.number().positive().max(600).default(10),
  })
  .superRefine((n, ctx) => {
    if ((n.command === undefined) === (n.webhook === undefined)) ctx.addIssue({ code: "custom", message: "give exactly one of command and webhook" });
  });
export type Notifier = z.infer<typeof Notifier>;

/** `notify:` — who hears about cards and runs (docs/notify.md). */
export const NotifyConfig = z.strictObject({
  /** The console's base URL in notification links, for a console reached through a tunnel; default the server's own URL. */
  console_url: NotifyUrl.optional(),
  notifiers: z.array(Notifier).default([]),
});
export type NotifyConfig = z.infer<typeof NotifyConfig>;

/**
 * `fleet:` (SPEC §5.8). `lease_ttl_seconds`: a running turn's lease, renewed every third of it (default 15);
 * `sweep_seconds`: how often a process sweeps expired leases (5); `poll_seconds`: how often a waited card is
 * re-read besides notifications (2); `queue_timeout_seconds`: how long a turn an `api` node queued waits for a
 * worker to claim it before it fails `no_worker` (60); `worker_turns`: the most queued turns one node runs at
 * once (16). The sweep and the poll must be shorter than the lease.
 */
export const FleetConfig = z
  .strictObject({
    lease_ttl_seconds: z.number().positive().default(15),
    sweep_seconds: z.number().positive().default(5),
    poll_seconds: z.number().positive().default(2),
    /** How long a turn queued by an `api` node waits for a worker to claim it before it fails `no_worker`, s. */
    queue_timeout_seconds: z.number().positive().default(60),
    /** The most queued turns one `worker`/`all` node runs at once; it claims more as they end (others claim the rest). */
    worker_turns: z.number().int().positive().default(16),
  })
  .refine((f) => f.sweep_seconds < f.lease_ttl_seconds && f.poll_seconds < f.lease_ttl_seconds, {
    message: "fleet.sweep_seconds and fleet.poll_seconds must be shorter than fleet.lease_ttl_seconds",
  });
export type FleetConfig = z.infer<typeof FleetConfig>;

export const Config = z.strictObject({
  provider: ProviderConfig.default(ProviderConfig.parse({})),
  mode: Mode.default("smart"),
  sandbox: SandboxPolicyName.default("workspace-write"),
  /** Where bubblewrap cannot run: run confined policies unconfined (every result says so). Default: refuse. */
  allow_unenforced: z.boolean().default(false),
  execution_backend: z.enum(["local", "external"]).default("local"),
  /** Host unix sockets (absolute paths) that `read-only` / `workspace-write` processes may connect to. Default: none. */
  sandbox_unix_sockets: z.array(z.string().refine((p) => p.startsWith("/"), "must be an absolute path")).default([]),
  /**
   * Bound on the folders one repository-metadata scan of a workspace-write root visits. Over it, a call
   * is refused (`metadata_scan_limit`); a call that grows the tree past it gets an "incomplete" warning.
   */
  sandbox_scan_max_folders: z.number().int().positive().default(200_000),
  privacy: Privacy.default("public"),
  approvals: z.strictObject({ ttl_seconds: z.number().int().positive().default(3600) }).default({ ttl_seconds: 3600 }),
  /** Several processes on one PostgreSQL store (SPEC §5.8): lease length, sweep and poll intervals, in seconds. */
  fleet: FleetConfig.prefault({}),
  hooks: HooksConfig.default(HooksConfig.parse({})),
  limits: Limits.default(Limits.parse({})),
  /** What the model is offered (`offer`) and per-tool permission (`allow | ask | deny`), keyed by airlock tool name. */
  tools: ToolsConfig.prefault({}),
  permissions: Permissions.default({ allow: [], ask: [], deny: [], import_claude_settings: false, tests: [] }),
  mcp_servers: z
    .record(z.string().regex(/^[a-zA-Z0-9-]+$/, "server names are letters, digits and '-'"), McpServerConfig)
    .superRefine(refuseReservedServerNames)
    .default({}),
  server: z
    .strictObject({
      /** The address (or name) `airlock serve` binds: an IPv6 address without brackets (`::1`, not `[::1]`). */
      host: z
        .string()
        .min(1, "must name the address to listen on, e.g. 127.0.0.1")
        .refine((h) => !h.includes("[") && !h.includes("]"), { message: "write an IPv6 address without brackets, e.g. ::1 (not [::1]): airlock adds them in URLs" })
        .default("127.0.0.1"),
      port: z.number().int().min(0).max(65535).default(7420),
    })
    .default({ host: "127.0.0.1", port: 7420 }),
  notify: NotifyConfig.default({ notifiers: [] }),
  /**
   * Where sessions, audit and schedules are stored: a `postgres://` / `postgresql://` URL (docs/scale-out.md);
   * absent: the embedded SQLite database in the data dir. `$AIRLOCK_DATABASE_URL`, when set, wins (store/storage.ts).
   */
  storage: z
    .string()
    .regex(/^postgres(ql)?:\/\/\S+$/i, "must be a postgres:// or postgresql:// URL (absent: the embedded SQLite database)")
    .optional(),
});
export type Config = z.infer<typeof Config>;

/** The defaults, as one value (what an empty `airlock.yaml` means). */
export function defaultConfig(): Config {
  return Config.parse({});
}
