/**
 * @module main
 * The binary entry (SPEC §2): argv → commander → one thin command module under `cli/`, loaded
 * lazily so `--version` and `--help` stay fast. Usage errors exit 2 on stderr, naming the bad flag.
 */
import { Command, CommanderError, InvalidArgumentError, Option } from "commander";
import { version } from "../package.json" with { type: "json" };
import { errorLine, reportError, writeAll } from "./cli/output.ts";
import { BEFORE_COMMANDER } from "./cli/usage-error.ts";
import { AirlockError, EXIT, exitCodeFor } from "./errors.ts";

const MODES = ["autonomous", "smart", "approve", "chat"];
const SANDBOXES = ["read-only", "workspace-write", "danger-full-access"];
const PROVIDERS = ["openai", "openai-responses", "anthropic", "scripted"];
const OUTPUT_FORMATS = ["text", "json", "stream-json"];

/** `--port`: an integer 0–65535. */
function parsePort(value: string): number {
  if (!/^\d+$/.test(value) || Number(value) > 65535) throw new InvalidArgumentError("expected an integer from 0 to 65535.");
  return Number(value);
}

/** `--param KEY=VALUE`, repeatable: collects into an object (later values win). */
/** Parses `schedule runs --limit N`: an integer from 1 to 1000. */
function parseRunsLimit(value: string): number {
  if (!/^\d+$/.test(value) || Number(value) < 1 || Number(value) > 1000) throw new InvalidArgumentError("expected an integer from 1 to 1000.");
  return Number(value);
}

function collectParam(value: string, previous: Record<string, string> = {}): Record<string, string> {
  const eq = value.indexOf("=");
  const key = eq > 0 ? value.slice(0, eq).trim() : "";
  if (!/^[A-Za-z_][A-Za-z0-9_.-]*$/.test(key)) {
    throw new InvalidArgumentError("expected KEY=VALUE with KEY made of letters, digits, '_', '-', '.' (e.g. --param project=./src).");
  }
  return { ...previous, [key]: value.slice(eq + 1) };
}

/** A non-empty string flag value. */
export function nonEmpty(value: string): string {
  if (value.trim() === "") throw new InvalidArgumentError("expected a non-empty value.");
  return value;
}

function withCommon(cmd: Command): Command {
  return cmd
    .addOption(new Option("--data-dir <dir>", "data dir (default: $AIRLOCK_HOME, $XDG_DATA_HOME/airlock, ~/.local/share/airlock)").argParser(nonEmpty))
    .addOption(new Option("--config <file>", "config file (default: <data dir>/airlock.yaml)").argParser(nonEmpty));
}

function withJson(cmd: Command): Command {
  return cmd.option("--json", "print JSON on stdout");
}

function withUrl(cmd: Command): Command {
  return cmd.addOption(new Option("--url <url>", "the running airlock serve (default: $AIRLOCK_URL, else the live airlock serve recorded in the data dir's serve.lock, else http://<server.host>:<server.port> from the config, sent a token only once it proves it holds the data dir's API token)").argParser(nonEmpty));
}

function examples(lines: string[]): string {
  return `\nExamples:\n${lines.map((l) => `  $ ${l}`).join("\n")}\n`;
}

/** Each command's name and the function adding it to the program, in the order `--help` lists them. */
const COMMANDS: readonly (readonly [string, (program: Command, done: (code: number) => void) => void])[] = [
  ["serve", addServeCommand],
  ["run", addRunCommand],
  ["sessions", addSessionsCommand],
  ["actions", addActionsCommand],
  ["attach", addAttachCommand],
  ["audit", addAuditCommand],
  ["policy", addPolicyCommand],
  ["schedule", addScheduleCommand],
  ["doctor", addDoctorCommand],
  ["mcp", addMcpCommand],
  ["console", addConsoleCommand],
  ["token", addTokenCommand],
  ["trust", addTrustCommand],
  ["acp", addAcpCommand],
  ["version", addVersionCommand],
];

/**
 * The top-level command `argv` invokes, when its first argument names one (then only that command's
 * part of the tree is needed to parse it: docs/performance.md, cold start); else undefined (the whole
 * tree: program help, the help command, an unknown command and its suggestion, a program option).
 */
export function invokedCommand(argv: readonly string[]): string | undefined {
  const first = argv[0];
  return COMMANDS.some(([name]) => name === first) ? first : undefined;
}

/**
 * Builds the command tree. Each action sets `exitCode` through `done`. `only`: build just this top-level
 * command under the program (the parse of an argv whose first argument names it is the same).
 */
export function buildProgram(done: (code: number) => void, only?: string): Command {
  const program = new Command("airlock")
    .description("An AI agent runtime: every tool call is judged before it runs; asks reach the person watching; headless runs fail closed.")
    .version(version, "-V, --version", "print the version")
    .helpOption("-h, --help", "show help")
    .helpCommand("help [command]", "show help for a command")
    .showSuggestionAfterError(true)
    .exitOverride()
    .configureOutput({
      writeOut: (str) => writeAll(1, str),
      writeErr: (str) => writeAll(2, str),
      // commander's own usage errors: the CLI's one error line (str is "error: MESSAGE\n")
      outputError: (str, write) => write(errorLine("usage", str.replace(/^error: /, "").replace(/\n$/, ""))),
    })
    .addHelpText(
      "after",
      examples([
        "airlock serve --port 7420",
        'airlock run "list the files in this folder" --mode smart',
        "airlock run --recipe nightly.yaml --param project=./api --headless --output-format json",
        "airlock actions list",
        "airlock audit --session ses_0193… --decision deny",
        "airlock policy explain --tool developer__shell --args '{\"command\":\"npm test\"}' --mode smart",
        "airlock console",
        "airlock attach",
        "airlock token",
        "airlock trust ~/src/my-project",
      ]) + "\nDocs: README.md and docs/ (quickstart, configuration, recipes, console, mcp, api, providers, scale-out, security-model, performance; spec.md is the contract).\n",
    );

  for (const [name, add] of COMMANDS) if (only === undefined || only === name) add(program, done);

  // Every command points at its own --help after a usage error.
  const hint = (cmd: Command): void => {
    const path: string[] = [];
    for (let c: Command | null = cmd; c; c = c.parent) path.unshift(c.name());
    cmd.showHelpAfterError(`Run '${path.join(" ")} --help' for usage.`);
    cmd.commands.forEach(hint);
  };
  hint(program);
  return program;
}

/** `airlock acp`: airlock as an Agent Client Protocol agent on stdio (docs/acp.md). */
function addAcpCommand(program: Command, done: (code: number) => void): void {
  withCommon(
    program
      .command("acp")
      .summary("run as an Agent Client Protocol agent on stdin/stdout (for editors such as Zed)")
      .description("Speak the Agent Client Protocol (ACP v1) on stdin/stdout: each ACP session is a root session in the editor's folder, its cards are the editor's permission requests. Stdout is the protocol; logs go to stderr.")
      .option("--headless", "the editor answers no permission requests: every ask is refused at once (no_human_surface)", false),
  )
    .addHelpText("after", examples(["airlock acp", "airlock acp --data-dir ~/.local/share/airlock --config ~/airlock.yaml"]))
    .action(async (opts) => done(await (await import("./cli/acp.ts")).acp(opts)));
}

/** `airlock serve`: the HTTP API and the scheduler. */
function addServeCommand(program: Command, done: (code: number) => void): void {
  withCommon(
    program
      .command("serve")
      .summary("start the HTTP API (default 127.0.0.1:7420)")
      .description(
        "Start the HTTP API and the scheduler on the store (the data dir's SQLite file, or PostgreSQL with storage: postgres://…), until SIGINT/SIGTERM. " +
          "On PostgreSQL, --role splits a fleet: api nodes serve the API, SSE and console and queue the turns they are asked for; " +
          "worker nodes bind no port and run queued turns and schedule fires; all (the default) does both. " +
          "On SQLite the server records its URL in the data dir's serve.lock: console, actions, schedule and attach with the same --data-dir find it there, whatever port it took.",
      )
      .option("--host <host>", "interface to bind (default: server.host from the config, 127.0.0.1)")
      .addOption(new Option("--port <port>", "port, 0 = any free port (default: server.port from the config, 7420)").argParser(parsePort))
      .option("--headless", "no person answers on this server: every session is headless, and every ask is refused at once", false)
      .addOption(new Option("--role <role>", "what this node does in a fleet: all (API, SSE and turns), api (API and SSE; turns queued for workers; schedules enqueued only), worker (runs queued turns and schedules; no port); api and worker need a PostgreSQL store").choices(["all", "api", "worker"]).default("all")),
  )
    .addHelpText("after", examples(["airlock serve", "airlock serve --port 0 --data-dir /tmp/airlock-demo   # then: airlock console --data-dir /tmp/airlock-demo", "airlock serve --headless   # an unattended server: asks are refused, never parked",
        "AIRLOCK_DATABASE_URL=postgres://… airlock serve --role api      # + airlock serve --role worker on other hosts",
      ]))
    .action(async (opts) => done(await (await import("./cli/serve.ts")).serve(opts)));
}

/** `airlock run`: one turn from a prompt or a recipe. */
function addRunCommand(program: Command, done: (code: number) => void): void {
  withCommon(
    program
      .command("run")
      .summary("run one turn from a prompt or a recipe and print the answer")
      .description("Run one turn and print the result on stdout (text, one JSON object, or NDJSON events); logs go to stderr.\nExit codes: 0 completed, 1 failed, 2 usage/config error, 3 blocked (a call needed a person and none could answer), 130 cancelled.")
      .argument("[prompt]", "what to ask; - reads it from stdin (stdin is read only then); default: the recipe's instructions")
      .addOption(new Option("--recipe <file>", "a recipe YAML file (instructions, parameters, provider, mode, sandbox, hooks)").argParser(nonEmpty))
      .addOption(new Option("--param <key=value>", "a recipe parameter (repeatable)").argParser(collectParam).default({}, "none"))
      .option("--headless", "no person can answer: any ask is refused at once", false)
      .addOption(new Option("--output-format <format>", "how to print the result").choices(OUTPUT_FORMATS).default("text"))
      .addOption(new Option("--mode <mode>", "approval mode").choices(MODES))
      .addOption(new Option("--sandbox <policy>", "sandbox policy for host processes").choices(SANDBOXES))
      .addOption(new Option("--workspace <dir>", "the session's workspace folder (default: the current directory)").argParser(nonEmpty))
      .addOption(new Option("--provider <name>", "model provider").choices(PROVIDERS))
      .addOption(new Option("--model <name>", "model name (with --provider, unless the config names the provider)").argParser(nonEmpty)),
  )
    .addHelpText(
      "after",
      examples([
        'airlock run "summarise README.md"',
        "airlock run - < task.txt   # the prompt from stdin",
        "airlock run --recipe triage.yaml --param project=. --headless --output-format json",
        'airlock run "fix the failing test" --mode approve --sandbox workspace-write --output-format stream-json',
      ]),
    )
    .action(async (prompt: string | undefined, opts) => done(await (await import("./cli/run.ts")).run(prompt, opts)));
}

/** `airlock sessions list|show`: the stored sessions. */
function addSessionsCommand(program: Command, done: (code: number) => void): void {
  const sessions = program
    .command("sessions")
    .summary("list stored sessions, or show one with its messages")
    .description("Inspect the sessions stored in the data dir.")
    .addHelpText("after", examples(["airlock sessions list", "airlock sessions show ses_0193a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5"]));
  withJson(withCommon(sessions.command("list").description("list sessions, newest first"))).action(async (opts) =>
    done(await (await import("./cli/sessions.ts")).sessionsList(opts)),
  );
  withJson(withCommon(sessions.command("show").description("show one session and its messages").argument("<id>", "session id (ses_…)"))).action(
    async (id: string, opts) => done(await (await import("./cli/sessions.ts")).sessionsShow(id, opts)),
  );
}

/** `airlock actions list|answer`: pending cards on a running server. */
function addActionsCommand(program: Command, done: (code: number) => void): void {
  const actions = program
    .command("actions")
    .summary("list pending approval cards, or answer one")
    .description("The calls waiting for a person's decision on a running `airlock serve`.")
    .addHelpText(
      "after",
      examples([
        "airlock actions list --session ses_0193…",
        "airlock actions answer act_0193… --allow-once",
        "airlock actions answer act_0193… --allow-session",
        'airlock actions answer act_0193… --deny --reason "not on main"',
        "airlock actions answer act_0193… --session ses_0193… --allow-once",
      ]),
    );
  withUrl(
    withJson(
      withCommon(
        actions
          .command("list")
          .description("list pending cards")
          .addOption(new Option("--session <id>", "only the cards this session may answer").argParser(nonEmpty)),
      ),
    ),
  ).action(async (opts) => done(await (await import("./cli/actions.ts")).actionsList(opts)));
  withUrl(
    withJson(
      withCommon(
        actions
          .command("answer")
          .description("allow once, allow for the session, or deny one pending call")
          .argument("<request_id>", "the card's request id (act_…)")
          .addOption(new Option("--session <id>", "the session answering (a surface of the card); default: the root session the card was relayed to").argParser(nonEmpty))
          .addOption(new Option("--allow-once", "allow this one call").conflicts(["deny", "allowSession"]))
          .addOption(new Option("--allow-session", "allow this call and add the card's suggested rule for the session tree").conflicts(["deny", "allowOnce"]))
          .addOption(new Option("--deny", "refuse the call").conflicts(["allowOnce", "allowSession"]))
          .option("--reason <text>", "why (recorded; shown to the model on deny)"),
      ),
    ),
  ).action(async (requestId: string, opts, cmd: Command) => {
    if (!opts.allowOnce && !opts.allowSession && !opts.deny) {
      cmd.error("error: one of --allow-once, --allow-session or --deny is required.", { exitCode: exitCodeFor("usage"), code: "airlock.missingDecision" });
    }
    const { allowOnce, allowSession, deny, ...rest } = opts;
    void deny;
    done(await (await import("./cli/actions.ts")).actionsAnswer(requestId, { ...rest, decision: allowOnce ? "allow_once" : allowSession ? "allow_session" : "deny" }));
  });
}

/** `airlock attach`: follow a session tree from the terminal and answer its cards. */
function addAttachCommand(program: Command, done: (code: number) => void): void {
  withUrl(
    withCommon(
      program
        .command("attach")
        .summary("follow a session tree from the terminal and answer its cards")
        .description(
          "Follow a session and every subagent under it on a running airlock serve: one line per event, labelled with the agent chain.\n" +
            "A card rings the bell, ignores keys for 400 ms (type-ahead never answers it), then: y allow once, n deny (with a reason for the model),\n" +
            "a allow for this session (when the card offers a rule), v view the full arguments, s skip, q detach. A running turn keeps running after you detach.\n" +
            "attach follows only turns airlock serve runs: a session whose turn an airlock run runs (its terminal answers its cards) is session_busy, exit 1.\n" +
            "When the server goes away attach reconnects; without --url or $AIRLOCK_URL it reads the data dir's serve.lock again at each try,\n" +
            "so a server restarted on another port is followed. Default SESSION: the newest root session with a running turn or a pending card. See docs/attach.md.",
        )
        .argument("[session]", "the session to follow with its subagents (ses_…)")
        .option("--plain", "no raw terminal and no colours: decisions are lines on stdin (y ID | n ID [reason] | a ID | q)", false)
        .option("--notify", "also send OSC 9 (a desktop notification in terminals that support it) with each card's bell", false)
        .option("--exit-when-idle", "detach once the tree has no running turn and no pending card", false),
    ),
  )
    .addHelpText(
      "after",
      examples([
        "airlock attach",
        "airlock attach ses_0193… --notify",
        "airlock attach ses_0193… --plain --exit-when-idle   # a script: reads 'y act_…' / 'n act_… reason' lines on stdin",
        "airlock attach --url http://127.0.0.1:8080 --data-dir /srv/airlock",
      ]),
    )
    .action(async (session: string | undefined, opts) => done(await (await import("./cli/attach.ts")).attach(session, opts)));
}

/** `--limit N` of `airlock audit`: an integer from 1 to 1000. */
function parseAuditLimit(value: string): number {
  if (!/^\d+$/.test(value) || Number(value) < 1 || Number(value) > 1000) throw new InvalidArgumentError("expected an integer from 1 to 1000.");
  return Number(value);
}

/** `airlock audit`: the decision log, read from the data dir's database (no server needed). */
function addAuditCommand(program: Command, done: (code: number) => void): void {
  withJson(
    withCommon(
      program
        .command("audit")
        .summary("show the decision log: every judged call, card and answer attempt")
        .description(
          "The decision log from the data dir's database (works without a server): each judged call with the inspector " +
            "or rule that decided it, its card and who answered (session, with or without user proof), refused answer " +
            "attempts, and timings (ms judging, parked, running). Newest first.",
        )
        .addOption(new Option("--session <id>", "only this session and the sessions under it").argParser(nonEmpty))
        .addOption(new Option("--since <id-or-time>", "rows after this audit id, or at or after this ISO time (2026-12-01T03:00:00Z)").argParser(nonEmpty))
        .addOption(new Option("--decision <d>", "allow, ask, deny, refused, a card's allow_once/deny/expired, or an error code (no_human_surface …)").argParser(nonEmpty))
        .addOption(new Option("--limit <n>", "at most this many rows (1–1000, default 100)").argParser(parseAuditLimit))
        .addOption(new Option("--export <format>", "print every matching row, oldest first, one JSON object per line").choices(["jsonl"]).conflicts(["json", "limit"])),
    ),
  )
    .addHelpText(
      "after",
      examples([
        "airlock audit",
        "airlock audit --session ses_0193… --decision deny",
        "airlock audit --decision no_human_surface --since 2026-12-01T00:00:00Z --json",
        "airlock audit --export jsonl --since 4812 >> decisions.jsonl",
      ]),
    )
    .action(async (opts) => done(await (await import("./cli/audit.ts")).auditCommand(opts)));
}

/** `airlock policy explain`: how the gate would judge one call, offline, with exit 0/1/2 for allow/deny/ask. */
function addPolicyCommand(program: Command, done: (code: number) => void): void {
  const policy = program
    .command("policy")
    .summary("check a policy: explain how the gate would judge a call")
    .description("Check the permission policy of a config offline (no server, no MCP server, no model).")
    .addHelpText("after", examples(["airlock policy explain --tool developer__shell --args '{\"command\":\"npm test\"}' --mode smart"]));
  withJson(
    withCommon(
      policy
        .command("explain")
        .description(
          "Judge one call as the gate would and print each inspector's verdict in order (security floor, rules, hooks, mode, " +
            "per-tool config, elevation) and the combined decision. Hooks are listed, not run, unless --run-hooks; they are the " +
            "hooks airlock run would have in the workspace (with hooks.import_claude_settings, the workspace's own .claude hooks " +
            "only when the folder is trusted: airlock trust DIR).\n" +
            "Exit codes: 0 allow, 1 deny, 2 ask. A usage or config error prints `airlock: <code>: …` on stderr and nothing on " +
            "stdout (exit 2 for usage/config), so an empty stdout tells an error from an ask.",
        )
        .addOption(new Option("--tool <name>", "airlock's tool name (developer__shell, developer__read_file, an MCP server's fs__read …)").argParser(nonEmpty).makeOptionMandatory())
        .addOption(new Option("--args <json>", "the call's arguments as a JSON object").argParser(nonEmpty).default("{}"))
        .addOption(new Option("--mode <mode>", "judge under this mode instead of the config's").choices(MODES))
        .addOption(new Option("--sandbox <policy>", "judge under this sandbox policy instead of the config's").choices(SANDBOXES))
        .addOption(new Option("--workspace <dir>", "the workspace the call is judged in, as airlock run's (default: the current directory)").argParser(nonEmpty))
        .option("--run-hooks", "run the matching PreToolUse hooks for real (they start processes)", false),
    ),
  )
    .addHelpText(
      "after",
      examples([
        "airlock policy explain --tool developer__shell --args '{\"command\":\"npm test && curl x | sh\"}' --mode smart",
        "airlock policy explain --tool developer__read_file --args '{\"path\":\".env\"}' --config ./airlock.yaml --json",
        "airlock policy explain --tool developer__shell --args '{\"command\":\"git push\"}' --run-hooks || echo \"not allowed: exit $?\"",
      ]),
    )
    .action(async (opts) => done(await (await import("./cli/policy.ts")).policyExplain(opts)));
}

/** `airlock schedule add|list|remove|run|runs`: scheduled headless runs. */
function addScheduleCommand(program: Command, done: (code: number) => void): void {
  const schedule = program
    .command("schedule")
    .summary("scheduled headless runs of recipes: add, list, remove, run now, run history")
    .description("Recipes run headless on a cron schedule by `airlock serve`.")
    .addHelpText("after", examples(['airlock schedule add --cron "0 3 * * *" --recipe nightly.yaml --name nightly', "airlock schedule list", "airlock schedule run sch_0193…", "airlock schedule runs sch_0193…", "airlock schedule remove sch_0193…"]));
  withUrl(
    withJson(
      withCommon(
        schedule
          .command("add")
          .description("add a schedule")
          .addOption(new Option("--cron <expr>", "cron expression, e.g. \"0 3 * * *\" (6 fields = seconds first)").argParser(nonEmpty).makeOptionMandatory())
          .addOption(new Option("--recipe <file>", "the recipe to run").argParser(nonEmpty).makeOptionMandatory())
          .addOption(new Option("--name <name>", "a label (default: the recipe's name)").argParser(nonEmpty))
          .addOption(new Option("--param <key=value>", "a recipe parameter stored with the schedule (repeatable)").argParser(collectParam).default({}, "none")),
      ),
    ),
  ).action(async (opts) => done(await (await import("./cli/schedule.ts")).scheduleAdd(opts)));
  withUrl(withJson(withCommon(schedule.command("list").description("list schedules")))).action(async (opts) => done(await (await import("./cli/schedule.ts")).scheduleList(opts)));
  withUrl(withJson(withCommon(schedule.command("remove").description("remove a schedule").argument("<id>", "schedule id (sch_…)")))).action(async (id: string, opts) =>
    done(await (await import("./cli/schedule.ts")).scheduleRemove(id, opts)),
  );
  withUrl(withJson(withCommon(schedule.command("run").description("run a schedule's recipe now, headless, wait, and print its result object").argument("<id>", "schedule id (sch_…)")))).action(
    async (id: string, opts) => done(await (await import("./cli/schedule.ts")).scheduleRun(id, opts)),
  );
  withUrl(
    withJson(
      withCommon(
        schedule
          .command("runs")
          .description("list runs, newest first: one schedule's (kept after it is removed) or, without ID, every schedule's")
          .argument("[id]", "schedule id (sch_…)")
          .addOption(new Option("--limit <n>", "at most N runs (1–1000)").argParser(parseRunsLimit)),
      ),
    ),
  ).action(async (id: string | undefined, opts) => done(await (await import("./cli/schedule.ts")).scheduleRuns(id, opts)));
}

/** `--timeout S` of `doctor` and `mcp check`: seconds, a number from 1 to 600. */
function parseCheckTimeout(value: string): number {
  const n = Number(value);
  if (!/^\d+(\.\d+)?$/.test(value) || n < 1 || n > 600) throw new InvalidArgumentError("expected seconds from 1 to 600.");
  return n;
}

/** `airlock doctor`: what airlock needs on this machine, one check per line with its fix. */
function addDoctorCommand(program: Command, done: (code: number) => void): void {
  withJson(
    withCommon(
      program
        .command("doctor")
        .summary("check what airlock needs here (bubblewrap, namespaces, python3, data dir, config, provider, port, storage, MCP servers)")
        .description(
          "One line per check, ok / warn / fail, with the fix for each miss: bubblewrap present and able to create a sandbox, unprivileged user namespaces " +
            "(and AppArmor's restriction on Ubuntu 24.04+), root, python3, the data dir (yours, 0700, writable) and its tokens (0600), the config " +
            "(every invalid key, and its warnings), the provider reached without spending tokens, server.port free or held by airlock, the storage (SQLite, or PostgreSQL reached, " +
            "its grants and schema version), and each MCP " +
            "server started once with its tools listed. Exit 0 when no check failed (warnings allowed), 1 otherwise. Nothing is created or changed.",
        )
        .addOption(new Option("--timeout <s>", "the most one MCP server may take to start and list its tools, seconds (default 30, or its own startup_timeout_s when smaller)").argParser(parseCheckTimeout)),
    ),
  )
    .addHelpText("after", examples(["airlock doctor", "airlock doctor --config ./airlock.yaml", "airlock doctor --json | jq '.checks[] | select(.status != \"ok\")'"]))
    .action(async (opts) => done(await (await import("./cli/doctor.ts")).doctorCommand(opts)));
}

/** `airlock mcp check NAME`: start one configured MCP server once and list its tools. */
function addMcpCommand(program: Command, done: (code: number) => void): void {
  const mcp = program
    .command("mcp")
    .summary("check a configured MCP server: start it once and list its tools")
    .description("The MCP servers under mcp_servers in the config.")
    .addHelpText("after", examples(["airlock mcp check fs", "airlock mcp check fs --json --timeout 60"]));
  withJson(
    withCommon(
      mcp
        .command("check")
        .description(
          "Start the MCP server NAME once, as airlock would (its sandbox policy, environment and workspace: the current directory), list its tools and stop it. " +
            "An npx-started server that cannot write npm's cache inside the sandbox is named as the cause at once. Exit 0 when it listed its tools, 1 otherwise.",
        )
        .argument("<name>", "the server's key under mcp_servers")
        .addOption(new Option("--timeout <s>", "the most it may take to start and list its tools, seconds (default 30, or its own startup_timeout_s when smaller)").argParser(parseCheckTimeout)),
    ),
  ).action(async (name: string, opts) => done(await (await import("./cli/doctor.ts")).mcpCheckCommand(name, opts)));
}

/** `airlock console`: the link that opens the console. */
function addConsoleCommand(program: Command, done: (code: number) => void): void {
  withUrl(
    withJson(
      withCommon(
        program
          .command("console")
          .summary("print the link that opens the watcher's console in a browser")
          .description(
            "Print http://HOST:PORT/#t=<api-token> for the running airlock serve: open it to watch sessions and answer cards.\n" +
              "The server is the one --url or $AIRLOCK_URL names, else the live one recorded in the data dir's serve.lock (any port), else server.host:server.port of the config\n" +
              "(there, the link is printed only once the server proved it holds this data dir's API token: GET /server-proof).\n" +
              "The token is in the fragment (never sent to the server); the page keeps it in sessionStorage.",
          ),
      ),
    ),
  )
    .addHelpText("after", examples(["airlock console", "airlock console --data-dir /tmp/airlock-demo   # the server of that data dir, on whatever port", "airlock console --url http://127.0.0.1:8080", "xdg-open \"$(airlock console)\""]))
    .action(async (opts) => done(await (await import("./cli/console.ts")).consoleCommand(opts)));
}

/** `airlock token`: where the tokens are. */
function addTokenCommand(program: Command, done: (code: number) => void): void {
  withJson(
    program
      .command("token")
      .summary("print where the API and approver tokens are (creating them if missing)")
      .description("Print the paths of the API token and the approver token, creating them (mode 0600) if missing.")
      .addOption(new Option("--data-dir <dir>", "data dir (default: $AIRLOCK_HOME, $XDG_DATA_HOME/airlock, ~/.local/share/airlock)").argParser(nonEmpty)),
  )
    .addHelpText("after", examples(["airlock token", 'curl -H "Authorization: Bearer $(cat ~/.local/share/airlock/api-token)" http://127.0.0.1:7420/sessions']))
    .action(async (opts) => done(await (await import("./cli/token.ts")).token(opts)));
}

/** `airlock version [--json]`: the build's facts (release.json's for this binary); `--version` stays one line. */
function addVersionCommand(program: Command, done: (code: number) => void): void {
  withJson(program.command("version").description("print the build's version, commit, build date, Bun version and target"))
    .addHelpText("after", examples(["airlock version", "airlock version --json"]))
    .action(async (opts) => done(await (await import("./cli/version.ts")).versionCommand(opts)));
}

/** `airlock trust DIR | --list | --revoke DIR`: folders whose own Claude Code hooks may run. */
function addTrustCommand(program: Command, done: (code: number) => void): void {
  withJson(
    withCommon(
      program
        .command("trust")
        .summary("trust a folder, so its own Claude Code hooks (.claude/settings*.json) may run; list or revoke")
        .description(
          "A repository's own hooks (.claude/settings.json and .claude/settings.local.json, read when hooks.import_claude_settings " +
            "is true) are code from that repository: airlock runs them only in a folder you trusted, or a folder under it. " +
            "Elsewhere they are not run, and runs and new sessions say so. Trusted hooks run confined to the session's sandbox " +
            "policy (the model can rewrite them). The list is kept in the data dir: it works while airlock serve runs and applies " +
            "to sessions started afterwards. Hooks in ~/.claude/settings.json are yours and need no trust.",
        )
        .argument("[dir]", "the folder to trust (its real path is stored; symlinks are resolved)")
        .addOption(new Option("--list", "list the trusted folders").conflicts(["revoke"]))
        .addOption(new Option("--revoke <dir>", "stop trusting this folder").argParser(nonEmpty)),
    ),
  )
    .addHelpText("after", examples(["airlock trust .", "airlock trust ~/src/my-project", "airlock trust --list", "airlock trust --revoke ~/src/my-project"]))
    .action(async (dir: string | undefined, opts, cmd: Command) => {
      if (dir !== undefined && (opts.list || opts.revoke !== undefined)) {
        cmd.error("error: give either a folder to trust, or --list, or --revoke DIR.", { exitCode: exitCodeFor("usage"), code: "airlock.trustConflict" });
      }
      done(await (await import("./cli/trust.ts")).trustCommand(dir, opts));
    });
}

/**
 * Runs the CLI and returns the exit code (SPEC §2): 0 ok, 1 failed, 2 usage/config error, 3 blocked, 130 cancelled.
 * `argv` is the user arguments only (no runtime/script path).
 */
export async function main(argv: string[]): Promise<number> {
  // The hidden `__script-exec` command (tests of the binary's embedded script worker, src/cli/script-exec.ts).
  // Handled before commander so that the arguments after it are never parsed as airlock flags.
  if (argv[0] === BEFORE_COMMANDER) {
    const { scriptExec } = await import("./cli/script-exec.ts");
    return scriptExec(argv.slice(1));
  }
  const started = Date.now();
  let code: number = EXIT.ok;
  const program = buildProgram((c) => {
    code = c;
  }, invokedCommand(argv));
  try {
    await program.parseAsync(argv, { from: "user" });
    return code;
  } catch (err) {
    if (err instanceof CommanderError) {
      // --help, help CMD, --version exit 0; an unknown flag/command, a missing or invalid argument, or help shown
      // because a subcommand is missing (`airlock sessions`) is a usage error.
      if (err.exitCode === 0) return EXIT.ok;
      // `airlock run --output-format json|stream-json`: a usage error still prints one result object (status invalid)
      const { machineFormatIn, writeEarlyResult } = await import("./cli/run.ts");
      const format = machineFormatIn(argv);
      const usage = new AirlockError("usage", err.message.replace(/^error: /, ""));
      if (format) await writeEarlyResult(format, usage, Date.now() - started);
      return exitCodeFor(usage.code);
    }
    return reportError(err);
  }
}

if (import.meta.main) {
  const code = await main(process.argv.slice(2));
  process.exit(code);
}
