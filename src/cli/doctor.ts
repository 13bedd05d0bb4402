/**
 * @module cli/doctor
 * `airlock doctor` and `airlock mcp check NAME`: what airlock needs on this machine, one check per line
 * (ok / warn / fail) with the fix for each miss — bubblewrap and user namespaces, root, python3, the data
 * dir and its tokens, the config, the provider (reached without spending tokens), the server port, and
 * each MCP server started once with its tools listed. Exit 0 when nothing failed, 1 otherwise.
 */
import { accessSync, constants, existsSync, readFileSync, realpathSync, statSync } from "node:fs";
import { APPROVER_TOKEN_FILE, dataDirProblem, MAX_TOKEN_FILE_BYTES, readTokenIfUsable, tokenFileProblem, type TokenFileProblem } from "../config/paths.ts";
import { createServer } from "node:net";
import { join } from "node:path";
import type { Config } from "../config/schema.ts";
import type { CommonOptions } from "./context.ts";

/** How one check came out: `ok` holds, `warn` works with a caveat (exit stays 0), `fail` needs fixing (exit 1). */
export type CheckStatus = "ok" | "warn" | "fail";

/** One line of the report: `{name, status, message, fix?}` (the `--json` shape of each check). */
export interface Check {
  /** Stable name: `bubblewrap`, `user_namespaces`, `root`, `python3`, `data_dir`, `tokens`, `config`, `provider`, `server_port`, `storage`, `mcp:<name>`. */
  name: string;
  status: CheckStatus;
  /** What was found. */
  message: string;
  /** What to do about a `warn` or `fail`. */
  fix?: string;
}

/** The `--json` object: `ok` is true when no check failed. */
export interface DoctorReport {
  ok: boolean;
  checks: Check[];
}

/** Options of `airlock doctor`. */
export interface DoctorOptions extends CommonOptions {
  json?: boolean;
  /** `--timeout S`: the most one MCP server may take to start and list its tools, seconds (default 30; a server's own `startup_timeout_s` / `timeout_s` when smaller). */
  timeout?: number;
}

/** Seconds one MCP server gets by default in `doctor` and `mcp check` (lowered to its own start-up timeout). */
export const DEFAULT_MCP_CHECK_S = 30;
/** Milliseconds the provider's endpoint gets to answer the GET. */
const PROVIDER_TIMEOUT_MS = 5000;
/** Milliseconds bubblewrap gets to start and exit the tiny probe. */
const BWRAP_TIMEOUT_MS = 10_000;

/** The sysctls that decide whether an unprivileged user may create user namespaces (undefined: not present on this kernel). */
export interface NamespaceSysctls {
  /** `/proc/sys/kernel/unprivileged_userns_clone` (Debian's patch): "0" forbids. */
  unprivilegedUsernsClone?: string;
  /** `/proc/sys/user/max_user_namespaces`: "0" forbids. */
  maxUserNamespaces?: string;
  /** `/proc/sys/kernel/apparmor_restrict_unprivileged_userns` (Ubuntu 23.10+, default 1 on 24.04): "1" restricts to profiled programs. */
  apparmorRestrict?: string;
}

/** Reads {@link NamespaceSysctls} from `/proc/sys` (absent files stay undefined). */
export function readNamespaceSysctls(root = "/proc/sys"): NamespaceSysctls {
  const read = (p: string): string | undefined => {
    try {
      return readFileSync(join(root, p), "utf8").trim();
    } catch {
      return undefined;
    }
  };
  return {
    unprivilegedUsernsClone: read("kernel/unprivileged_userns_clone"),
    maxUserNamespaces: read("user/max_user_namespaces"),
    apparmorRestrict: read("kernel/apparmor_restrict_unprivileged_userns"),
  };
}

/**
 * The `user_namespaces` check from the sysctls: which one stops an unprivileged user from creating user
 * namespaces (which bubblewrap needs when not root), with the fix for each. As root none of them matters.
 * AppArmor's restriction (Ubuntu 24.04+) is named with its two fixes: an AppArmor profile for bwrap, or the sysctl.
 */
export function namespaceCheck(s: NamespaceSysctls, isRoot: boolean): Check {
  const name = "user_namespaces";
  if (isRoot) return { name, status: "ok", message: "running as root: bubblewrap creates its namespaces without unprivileged user namespaces" };
  if (s.unprivilegedUsernsClone === "0") {
    return {
      name,
      status: "fail",
      message: "unprivileged user namespaces are disabled (kernel.unprivileged_userns_clone = 0), so bubblewrap cannot sandbox as this user",
      fix: "sudo sysctl -w kernel.unprivileged_userns_clone=1 (and add it to /etc/sysctl.d/ to keep it)",
    };
  }
  if (s.maxUserNamespaces === "0") {
    return {
      name,
      status: "fail",
      message: "user namespaces are disabled (user.max_user_namespaces = 0), so bubblewrap cannot sandbox as this user",
      fix: "sudo sysctl -w user.max_user_namespaces=15000 (and add it to /etc/sysctl.d/ to keep it)",
    };
  }
  if (s.apparmorRestrict === "1") {
    return {
      name,
      status: "warn",
      message: "AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns = 1, Ubuntu 24.04+): bubblewrap works only if an AppArmor profile allows it",
      fix:
        "give bwrap an AppArmor profile: write /etc/apparmor.d/bwrap with `abi <abi/4.0>, include <tunables/global> profile bwrap /usr/bin/bwrap flags=(unconfined) { userns, }` " +
        "and run `sudo apparmor_parser -r /etc/apparmor.d/bwrap`; or turn the restriction off: sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0",
    };
  }
  return { name, status: "ok", message: "unprivileged user namespaces are enabled" };
}

/** Runs bubblewrap once with the namespaces the launcher uses; resolves to its exit code and stderr (code null: killed after the timeout). */
async function runTinyBwrap(bwrap: string): Promise<{ code: number | null; stderr: string }> {
  const { sanitizedEnv } = await import("../launcher/env.ts");
  const p = Bun.spawn(
    [bwrap, "--die-with-parent", "--unshare-net", "--unshare-pid", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--", "true"],
    { stdin: "ignore", stdout: "ignore", stderr: "pipe", env: sanitizedEnv() },
  );
  const timer = setTimeout(() => p.kill("SIGKILL"), BWRAP_TIMEOUT_MS);
  const [code, stderr] = await Promise.all([p.exited, new Response(p.stderr).text()]);
  clearTimeout(timer);
  return { code: p.signalCode ? null : code, stderr: stderr.trim() };
}

/** The `bubblewrap` check: present on PATH, and a real tiny sandbox starts and exits 0. */
async function bubblewrapCheck(nsFix: string | undefined): Promise<Check> {
  const { findInPath } = await import("../launcher/resolve.ts");
  const { BWRAP_INSTALL_HINT } = await import("../launcher/probe.ts");
  const bwrap = findInPath("bwrap", process.env.PATH);
  if (!bwrap) {
    return { name: "bubblewrap", status: "fail", message: "bwrap is not on PATH: shell, interpreter, hook and MCP server processes are refused (sandbox_unavailable)", fix: BWRAP_INSTALL_HINT };
  }
  const run = await runTinyBwrap(bwrap);
  if (run.code === 0) return { name: "bubblewrap", status: "ok", message: `${bwrap} created a sandbox (pid and network namespaces, as the launcher does)` };
  return {
    name: "bubblewrap",
    status: "fail",
    message: `${bwrap} could not create a sandbox: ${run.code === null ? `no exit within ${BWRAP_TIMEOUT_MS / 1000} s` : `exit ${run.code}`}${run.stderr ? `: ${run.stderr.split("\n")[0]}` : ""}`,
    fix: nsFix ?? BWRAP_INSTALL_HINT,
  };
}

/** The `root` check: a note of what changes when airlock runs as root. */
function rootCheck(): Check {
  if (process.getuid?.() !== 0) return { name: "root", status: "ok", message: `running as uid ${process.getuid?.()} (not root)` };
  return {
    name: "root",
    status: "warn",
    message:
      "running as root: the sandbox still confines host processes (bubblewrap needs no user namespace then), but what they are allowed to write is written as root, " +
      "and danger-full-access means the whole machine",
    fix: "run airlock as an ordinary user (its data dir then lives in that user's home)",
  };
}

/** The `python3` check: `interpreter__python` runs `python3` from PATH. */
async function pythonCheck(): Promise<Check> {
  const { findInPath } = await import("../launcher/resolve.ts");
  const py = findInPath("python3", process.env.PATH);
  if (!py) {
    return { name: "python3", status: "warn", message: "python3 is not on PATH: interpreter__python calls fail", fix: "install Python 3 (Debian/Ubuntu: apt-get install python3; Alpine: apk add python3)" };
  }
  const p = Bun.spawn([py, "--version"], { stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  const [code, out, err] = await Promise.all([p.exited, new Response(p.stdout).text(), new Response(p.stderr).text()]);
  if (code !== 0) return { name: "python3", status: "warn", message: `${py} --version exited ${code}: ${err.trim()}`, fix: "reinstall Python 3" };
  return { name: "python3", status: "ok", message: `${(out || err).trim()} (${py})` };
}

/** The `data_dir` and `tokens` checks: the data dir exists, is this user's, mode 0700 and writable; the tokens exist, are this user's, with mode 0600. Creates nothing. */
function dataDirChecks(dir: string): Check[] {
  let st;
  try {
    st = statSync(dir);
  } catch {
    return [
      { name: "data_dir", status: "warn", message: `${dir} does not exist yet`, fix: "it is created (mode 0700) by the first airlock command that needs it, e.g. `airlock token`" },
      { name: "tokens", status: "warn", message: "no tokens yet", fix: "`airlock token` (or the first `airlock serve`) creates them with mode 0600" },
    ];
  }
  const checks: Check[] = [];
  const mode = st.mode & 0o777;
  let writable = true;
  try {
    accessSync(dir, constants.W_OK);
  } catch {
    writable = false;
  }
  const dirProblem = st.isDirectory() ? dataDirProblem(dir) : undefined;
  if (!st.isDirectory()) checks.push({ name: "data_dir", status: "fail", message: `${dir} is not a directory`, fix: "remove it, or pick another data dir with --data-dir or $AIRLOCK_HOME" });
  else if (dirProblem) checks.push({ name: "data_dir", status: "fail", message: `${dir} ${dirProblem.text}; airlock refuses it (data_dir_unusable)`, fix: dirProblem.fix(dir) });
  else if (!writable) checks.push({ name: "data_dir", status: "fail", message: `${dir} is not writable`, fix: `chmod u+w ${dir}, or pick another with --data-dir` });
  else if (mode & 0o077) checks.push({ name: "data_dir", status: "warn", message: `${dir} has mode 0${mode.toString(8)}: other users can look inside`, fix: `chmod 700 ${dir}` });
  else checks.push({ name: "data_dir", status: "ok", message: `${dir} (yours, mode 0700, writable)` });
  const missing: string[] = [];
  const loose: string[] = [];
  const foreign: string[] = [];
  const unusable: string[] = [];
  for (const f of ["api-token", "approver-token"]) {
    const p = join(dir, f);
    if (!existsSync(p)) {
      missing.push(f);
      continue;
    }
    const problem = tokenFileProblem(p);
    // the runtime refuses a token another user owns (config/paths.ts ensureTokens): that user knows it
    if (problem?.code === "EOWNER") foreign.push(`${f} (uid ${problem.uid})`);
    else if (problem) unusable.push(`${f} (${tokenProblemText(problem)})`);
    else {
      const mode = statSync(p).mode & 0o777;
      if (mode !== 0o600) loose.push(`${f} (mode 0${mode.toString(8)})`);
    }
  }
  if (unusable.length) checks.push({ name: "tokens", status: "fail", message: `token files airlock refuses: ${unusable.join(", ")}`, fix: `delete them; a new token is created (airlock token)` });
  else if (foreign.length) checks.push({ name: "tokens", status: "fail", message: `token files owned by another user: ${foreign.join(", ")}; airlock refuses them`, fix: `delete them (new tokens are created), or use your own data dir with --data-dir` });
  else if (loose.length) checks.push({ name: "tokens", status: "fail", message: `token files readable by others: ${loose.join(", ")}`, fix: `chmod 600 ${join(dir, "api-token")} ${join(dir, "approver-token")}` });
  else if (missing.length) checks.push({ name: "tokens", status: "warn", message: `not created yet: ${missing.join(", ")}`, fix: "`airlock token` (or the first `airlock serve`) creates them with mode 0600" });
  else checks.push({ name: "tokens", status: "ok", message: "api-token and approver-token present, mode 0600" });
  return checks;
}

/** A {@link TokenFileProblem} in a few words, for the tokens check. */
function tokenProblemText(p: TokenFileProblem): string {
  switch (p.code) {
    case "ENOTREG":
      return "not a regular file";
    case "EOWNER":
      return `owned by uid ${p.uid}`;
    case "ELINKED":
      return "a link to a file others can read";
    case "EFBIG":
      return `larger than ${MAX_TOKEN_FILE_BYTES} bytes`;
    case "EMPTY":
      return "empty";
    case "EUNREADABLE":
      return `unreadable: ${p.message}`;
    default: {
      const never: never = p;
      return `unknown: ${JSON.stringify(never)}`;
    }
  }
}

/** Names a well-known local model server by its port (for messages). */
function localServerName(url: URL): string | undefined {
  const port = url.port;
  if (port === "11434") return "Ollama";
  if (port === "1234") return "LM Studio";
  if (port === "8080") return "llama.cpp's server";
  if (port === "8000") return "vLLM";
  return undefined;
}

/**
 * The `provider` check: the config's provider answers a request that costs no tokens — `GET {base_url}/models`
 * for the OpenAI-compatible providers, `GET {base_url}/v1/models` for anthropic — with the key only when its
 * variable is set; any HTTP answer but 401/403 with a key means reachable. The scripted provider needs nothing.
 */
export async function providerCheck(cfg: Readonly<Config["provider"]>, env: Record<string, string | undefined>, configFile: string): Promise<Check> {
  const name = "provider";
  const { checkProviderConfig } = await import("../agent/providers/select.ts");
  try {
    checkProviderConfig(cfg, env, { requireModel: true, configFile });
  } catch (e) {
    return { name, status: "fail", message: (e as Error).message.split("\n")[0]!, fix: `edit provider: in ${configFile} (docs/configuration.md, docs/providers.md)` };
  }
  if (cfg.name === "scripted") return { name, status: "ok", message: `scripted: replays ${cfg.script} (no model server, no network)` };
  const { OPENAI_DEFAULT_BASE_URL, OPENAI_DEFAULT_KEY_ENV } = await import("../agent/providers/openai-defaults.ts");
  const anthropic = cfg.name === "anthropic";
  const base = (cfg.base_url ?? (anthropic ? "https://api.anthropic.com" : OPENAI_DEFAULT_BASE_URL)).replace(/\/+$/, "");
  const url = anthropic ? `${base}/v1/models` : `${base}/models`;
  const keyVar = cfg.api_key_env ?? (anthropic ? "ANTHROPIC_API_KEY" : OPENAI_DEFAULT_KEY_ENV);
  const key = env[keyVar];
  const headers: Record<string, string> = anthropic ? { "anthropic-version": "2023-06-01", ...(key ? { "x-api-key": key } : {}) } : key ? { authorization: `Bearer ${key}` } : {};
  const local = localServerName(new URL(base));
  const what = `${cfg.name} at ${base}${local ? ` (${local}'s port)` : ""}`;
  try {
    const res = await fetch(url, { headers, signal: AbortSignal.timeout(PROVIDER_TIMEOUT_MS), redirect: "manual" });
    await res.body?.cancel().catch(() => {});
    if ((res.status === 401 || res.status === 403) && key) {
      return { name, status: "fail", message: `${what} refused the key in $${keyVar} (GET ${url}: HTTP ${res.status})`, fix: `check the key in $${keyVar} (or provider.api_key_env names the wrong variable)` };
    }
    if (res.status === 404 && !anthropic) {
      return { name, status: "warn", message: `${what} answered GET ${url} with 404: reachable, but maybe not an OpenAI-compatible API at this path`, fix: "check provider.base_url (it usually ends in /v1)" };
    }
    return { name, status: "ok", message: `${what} answered GET ${url} (HTTP ${res.status}; no tokens spent)` };
  } catch (e) {
    const err = e as Error & { code?: string };
    const timedOut = err.name === "TimeoutError" || err.name === "AbortError";
    const why = timedOut ? `no answer within ${PROVIDER_TIMEOUT_MS / 1000} s` : (err.code ?? err.message);
    const fix = local === "Ollama" ? "start Ollama (`ollama serve`) and pull the model (`ollama pull " + (cfg.model ?? "MODEL") + "`), or fix provider.base_url" : `start the server at ${base}, or fix provider.base_url (and your network or proxy)`;
    return { name, status: "fail", message: `${what} could not be reached: ${why}`, fix };
  }
}

/**
 * The `server_port` check. While a live `airlock serve` holds the data dir (its `serve.lock`, trusted as the client
 * commands trust it: store/serve-lock.ts `recordedServer`), ok naming its pid and URL — the URL the client commands
 * use without `--url` — whatever port it took (`--port 0`, `--port N`); else `server.host:server.port` is free (ok)
 * or taken by another program (fail).
 */
async function portCheck(config: Readonly<Config>, dataDir: string): Promise<Check> {
  const { host, port } = config.server;
  const { recordedServer } = await import("../store/serve-lock.ts");
  // read, never created: doctor changes nothing
  const live = recordedServer(dataDir, readTokenIfUsable(join(dataDir, APPROVER_TOKEN_FILE)));
  if (live.state === "listening" || live.state === "starting") {
    const where = live.state === "listening" ? `listens on ${live.url}` : "is starting or stopping (no URL recorded)";
    const configured = live.state === "starting" || new URL(live.url).port === String(port) ? "" : ` (the config's server.port is ${port}; the client commands without --url use the URL in ${live.lockPath})`;
    return { name: "server_port", status: "ok", message: `this data dir's airlock serve (pid ${live.pid}) ${where}${configured}` };
  }
  const free = await new Promise<NodeJS.ErrnoException | null>((resolve) => {
    const s = createServer();
    s.once("error", (e) => resolve(e as NodeJS.ErrnoException));
    s.listen({ host, port, exclusive: true }, () => s.close(() => resolve(null)));
  });
  if (!free) return { name: "server_port", status: "ok", message: `${host}:${port} is free for airlock serve; ${live.why}` };
  if (free.code === "EADDRINUSE") {
    return { name: "server_port", status: "fail", message: `${host}:${port} is in use by another program`, fix: "stop it, or set server.port in the config (or airlock serve --port N)" };
  }
  return { name: "server_port", status: "fail", message: `cannot listen on ${host}:${port}: ${free.code ?? free.message}`, fix: "set server.host / server.port in the config" };
}

/** Stderr of an `npx` server that could not write npm's cache inside the sandbox. */
const NPM_CACHE_ERROR = /\b(ENOENT|EACCES|EROFS)\b/;
const NPM_CACHE_PATH = /\/\.npm\b|npm[-_ ]cache|_cacache/;

/**
 * Starts the MCP server `name` of `config` once, as airlock would (same sandbox policy, environment and
 * workspace), lists its tools and stops it. Gives up after `timeoutS` seconds (at most the server's own
 * `startup_timeout_s` / `timeout_s`), and at once when its stderr shows npm failing to write its cache
 * (`ENOENT`/`EACCES`/`EROFS` on `~/.npm`), which is then named as the cause.
 * @returns the `mcp:<name>` check. Never throws for a server that fails; the caller checks the name exists.
 */
export async function mcpCheck(config: Readonly<Config>, name: string, o: { workspace: string; dataDir: string; timeoutS: number }): Promise<Check> {
  const { McpServer } = await import("../tool/mcp/server.ts");
  const configured = config.mcp_servers[name]!;
  // npm says nothing about a cache it cannot write until its fetch retries end: its verbose log says it at once
  const viaNpm = /(^|\/)(npx|npm|pnpm|yarn)$/.test(configured.command);
  const server = viaNpm ? { ...configured, env: { npm_config_loglevel: "verbose", ...configured.env } } : configured;
  const own = server.startup_timeout_s ?? server.timeout_s;
  const timeoutS = Math.min(own, o.timeoutS);
  const stderr: string[] = [];
  let npmCache = false;
  let noRegistry = false;
  const mcp = new McpServer({
    name,
    server: { ...server, startup_timeout_s: timeoutS },
    config: config as Config,
    workspace: o.workspace,
    hiddenPaths: [o.dataDir],
    log: (line) => {
      stderr.push(line);
      const all = stderr.join("\n");
      if (!viaNpm || npmCache || noRegistry) return;
      if (NPM_CACHE_ERROR.test(all) && NPM_CACHE_PATH.test(all)) npmCache = true;
      else if (/\b(EAI_AGAIN|ENOTFOUND|ENETUNREACH)\b/.test(line)) noRegistry = true;
      else return;
      void mcp.close(); // the cause is known: do not wait out the timeout
    },
  });
  const label = `mcp:${name}`;
  const cmd = [server.command, ...server.args].join(" ");
  try {
    const tools = await mcp.tools();
    const failure = mcp.listFailure();
    if (npmCache) {
      return {
        name: label,
        status: "fail",
        message: `${cmd}: npm could not write its cache (~/.npm) inside the sandbox (${mcp.policy}), so the server never started`,
        fix: `install the server once outside airlock (e.g. npm install -g ${server.args.find((a) => !a.startsWith("-")) ?? "PACKAGE"}) and set mcp_servers.${name}.command to its binary; see docs/mcp.md`,
      };
    }
    if (noRegistry) {
      return {
        name: label,
        status: "fail",
        message: `${cmd}: npm cannot reach its registry from inside the sandbox (${mcp.policy}), so the package is never fetched and the server never starts`,
        fix: `install the server once outside airlock (e.g. npm install -g ${server.args.find((a) => !a.startsWith("-")) ?? "PACKAGE"}) and set mcp_servers.${name}.command to its binary; see docs/mcp.md`,
      };
    }
    if (failure !== undefined) {
      const tail = stderr.filter((l) => !l.includes("tools not listed")).slice(-3).map((l) => l.replace(`[mcp:${name}] `, "")).join(" | ");
      return {
        name: label,
        status: "fail",
        message: `${failure}${tail && !failure.includes(tail) ? ` (stderr: ${tail})` : ""}`,
        fix: /within \d/.test(failure)
          ? `raise mcp_servers.${name}.startup_timeout_s if it is only slow (doctor waited ${timeoutS} s; --timeout S), or run \`${cmd}\` by hand to see why it hangs`
          : `run \`${cmd}\` by hand in the workspace to see why it fails; check mcp_servers.${name} (docs/mcp.md)`,
      };
    }
    const names = tools.map((t) => t.name);
    return { name: label, status: "ok", message: `${cmd} started under ${mcp.policy} and listed ${names.length} tool${names.length === 1 ? "" : "s"}${names.length ? `: ${names.join(", ")}` : ""}` };
  } finally {
    await mcp.close();
  }
}

/**
 * Loads the context without creating the data dir: the data dir path, and the config or the `config` check's failure.
 * The data dir's own `airlock.yaml` is not read when the runtime refuses that data dir ({@link dataDirProblem}:
 * another user's, one its group or others may write, or one under a folder another user may change): whoever could put it there would choose the MCP servers the
 * doctor starts as this user and the provider URL it sends this user's API key to. A `--config` file is read.
 */
async function loadForDoctor(opts: CommonOptions): Promise<{ dataDir: string; loaded?: import("../config/load.ts").LoadedConfig; configCheck: Check[] }> {
  const { pickDataDir } = await import("../config/paths.ts");
  const { loadConfig } = await import("../config/load.ts");
  const { configWarnings } = await import("../config/warnings.ts");
  const picked = pickDataDir({ flag: opts.dataDir, env: process.env }).dir;
  // the folder checked is the folder read, as the runtime does (config/paths.ts resolveDataDir): its real path
  let dir = picked;
  try {
    dir = realpathSync(picked);
  } catch {
    // not made yet (or unresolvable: dataDirChecks says so)
  }
  if (opts.config === undefined || opts.config === "") {
    const problem = dataDirProblem(dir); // none for a data dir not made yet: no airlock.yaml in it either (loadConfig says so)
    if (problem) {
      const message = `data_dir_unusable: ${join(dir, "airlock.yaml")} not read: the data dir ${problem.text}`;
      return { dataDir: dir, configCheck: [{ name: "config", status: "fail", message, fix: problem.fix(dir) }] };
    }
  }
  try {
    const loaded = loadConfig({ configPath: opts.config, dataDir: dir });
    const warnings = configWarnings(loaded.config, loaded.dir, loaded.path);
    const checks: Check[] = [{ name: "config", status: "ok", message: loaded.path ? `${loaded.path} is valid` : `no ${join(dir, "airlock.yaml")}: the defaults apply` }];
    for (const w of warnings) checks.push({ name: "config", status: "warn", message: w, fix: "see docs/configuration.md" });
    return { dataDir: dir, loaded, configCheck: checks };
  } catch (e) {
    return { dataDir: dir, configCheck: configFailureChecks(e) };
  }
}

/**
 * The failed `config` checks for a config that does not load: one per problem. A key that fails validation
 * is one check (the `issues` lines, each with its line and column); a YAML syntax error is one check per
 * source line that has one (the first error reported there), with its position and the offending line (the caret line and the message's header and "Fix …" footer
 * are not problems of their own); any other error (a missing or unreadable file) is one check.
 */
export function configFailureChecks(e: unknown): Check[] {
  const fail = (message: string, fix: string): Check => ({ name: "config", status: "fail", message: `config_invalid: ${message}`, fix });
  const issues = (e as { details?: { issues?: unknown } }).details?.issues;
  if (Array.isArray(issues) && issues.length > 0 && issues.every((l) => typeof l === "string")) {
    return issues.map((l: string) => fail(l.trim(), "fix the key named (docs/configuration.md)"));
  }
  const message = e instanceof Error ? e.message : String(e);
  const lines = message.split("\n");
  const syntax: Check[] = [];
  const seen = new Set<string>();
  for (let i = 0; i < lines.length; i++) {
    const at = /^(.*):(\d+):\d+: YAML syntax error: /.exec(lines[i]!);
    if (!at || seen.has(at[2]!)) continue; // the parser's follow-on errors on the same line are not problems of their own
    seen.add(at[2]!);
    const src = lines[i + 1]?.startsWith("    ") && !/^ *\^$/.test(lines[i + 1]!) ? lines[i + 1]!.trim() : "";
    syntax.push(fail(`${lines[i]!.trim()}${src ? ` (in: ${src})` : ""}`, "fix the YAML syntax at that line and column (docs/configuration.md)"));
  }
  if (syntax.length > 0) return syntax;
  const first = lines.find((l) => l.trim() !== "")?.trim() ?? "the config does not load";
  return [fail(first, "fix the config file named (docs/configuration.md)")];
}

/**
 * The `storage` check: the embedded SQLite database (ok, nothing to reach), or the PostgreSQL database of
 * `$AIRLOCK_DATABASE_URL` / `storage:` reached with `SELECT 1` and its schema at this airlock's latest
 * migration version, and the user's grants: CREATE on the schema when migrations are due, and the schedule
 * queue's (pg-boss) schema creatable or usable (store/pg-grants.ts). A failure to connect says why (refused,
 * unknown host, timeout, login, no database) with the matching fix. The URL is shown with its password
 * redacted (store/sql-pg.ts `redactUrl`). Creates and migrates nothing.
 */
export async function storageCheck(storage: string | undefined, env: Readonly<Record<string, string | undefined>> = process.env): Promise<Check> {
  const { chooseStorage } = await import("../store/storage.ts");
  const { openPgSql, redactUrl } = await import("../store/sql-pg.ts");
  const { schemaVersionSql } = await import("../store/migrate.ts");
  const { PG_MIGRATIONS } = await import("../store/migrations-pg.ts");
  const { readPgGrants, migrationGrantError, queueGrantError } = await import("../store/pg-grants.ts");
  let choice;
  try {
    choice = chooseStorage(storage, env);
  } catch (e) {
    return { name: "storage", status: "fail", message: (e as Error).message, fix: "correct the URL in storage: or $AIRLOCK_DATABASE_URL (a postgres:// URL), or unset both for the embedded SQLite database" };
  }
  if (choice.kind === "sqlite") return { name: "storage", status: "ok", message: "embedded SQLite database in the data dir (no storage: set)" };
  const shown = redactUrl(choice.url);
  const from = choice.source === "env" ? "$AIRLOCK_DATABASE_URL" : "storage:";
  let sql;
  try {
    sql = await openPgSql(choice.url, { max: 1, connectionTimeoutS: 5 });
  } catch (e) {
    return { name: "storage", status: "fail", message: `PostgreSQL ${shown} (${from}) is not usable: ${(e as Error).message}`, fix: storageFix(e, from) };
  }
  try {
    const latest = Math.max(...PG_MIGRATIONS.map((m) => m.version));
    const at = await schemaVersionSql(sql);
    const grants = await readPgGrants(sql);
    const noMigrate = at < latest ? migrationGrantError(grants, shown) : null;
    if (noMigrate) return { name: "storage", status: "fail", message: `PostgreSQL ${shown} (${from}) reachable, schema at version ${at} of ${latest}, but migrations cannot run: ${noMigrate.message}`, fix: "run the GRANT named (as the database's owner or a superuser), then airlock serve migrates it" };
    const noQueue = queueGrantError(grants, shown);
    if (noQueue) return { name: "storage", status: "fail", message: noQueue.message, fix: "run the GRANT named (airlock serve refuses to start without it)" };
    if (at === latest) return { name: "storage", status: "ok", message: `PostgreSQL ${shown} (${from}) reachable, schema at version ${at}` };
    if (at < latest) return { name: "storage", status: "warn", message: `PostgreSQL ${shown} (${from}) reachable, schema at version ${at} of ${latest}`, fix: "the next `airlock serve` or `airlock run` migrates it (user ${grants.user} may)" };
    return { name: "storage", status: "fail", message: `PostgreSQL ${shown} (${from}) is at schema version ${at}, newer than this airlock (${latest})`, fix: "run the airlock version that migrated it" };
  } catch (e) {
    return { name: "storage", status: "fail", message: `PostgreSQL ${shown} (${from}): ${(e as Error).message}`, fix: "check the database user's rights" };
  } finally {
    await sql.close();
  }
}

/** The fix of a storage check whose database could not be opened, matching why (`details.reason`, store/sql-pg.ts `connectionProblem`). */
function storageFix(e: unknown, from: string): string {
  const err = e as { code?: unknown; details?: { reason?: unknown } } | null;
  const reason = err?.details?.reason;
  if (err?.code === "config_invalid") return `correct the URL in ${from}`;
  switch (reason) {
    case "login":
      return `correct the user and password in ${from} (or the server's pg_hba.conf)`;
    case "no_database":
      return `create the database (createdb), or correct its name in ${from}`;
    case "unknown_host":
      return `correct the host in ${from} (it does not resolve)`;
    case "timeout":
      return `check that the host in ${from} is reachable from here (firewall, network) and the server runs`;
    case "refused":
      return `start the server, or correct the host and port in ${from}`;
    case "tls":
      return `check sslmode in ${from} and the server's ssl setting`;
    case "server_busy":
      return "wait for the server, or raise its max_connections";
    default:
      return `check that the server runs, and the host, port, database and credentials in ${from}`;
  }
}

/** Runs every check of `airlock doctor`, in order; MCP servers one after the other. */
export async function runDoctor(opts: DoctorOptions): Promise<DoctorReport> {
  const isRoot = process.getuid?.() === 0;
  const ns = namespaceCheck(readNamespaceSysctls(), isRoot);
  const checks: Check[] = [await bubblewrapCheck(ns.status === "ok" ? undefined : ns.fix), ns, rootCheck(), await pythonCheck()];
  const { dataDir, loaded, configCheck } = await loadForDoctor(opts);
  checks.push(...dataDirChecks(dataDir), ...configCheck);
  if (loaded) {
    checks.push(await providerCheck(loaded.config.provider, process.env, loaded.path ?? join(dataDir, "airlock.yaml")));
    checks.push(await portCheck(loaded.config, dataDir));
    checks.push(await storageCheck(loaded.config.storage, process.env));
    for (const name of Object.keys(loaded.config.mcp_servers)) {
      checks.push(await mcpCheck(loaded.config, name, { workspace: process.cwd(), dataDir, timeoutS: opts.timeout ?? DEFAULT_MCP_CHECK_S }));
    }
  }
  return { ok: checks.every((c) => c.status !== "fail"), checks };
}

/** Prints a report: `--json` one object `{ok, checks}`, else one line per check and an indented `fix:` line under each miss. */
async function printReport(report: DoctorReport, json: boolean | undefined): Promise<number> {
  const { writeStdout, writeJson } = await import("./output.ts");
  if (json) writeJson(report);
  else {
    let out = "";
    for (const c of report.checks) {
      out += `${c.status.padEnd(4)}  ${c.name}: ${c.message}\n`;
      if (c.fix && c.status !== "ok") out += `      fix: ${c.fix}\n`;
    }
    const failed = report.checks.filter((c) => c.status === "fail").length;
    const warned = report.checks.filter((c) => c.status === "warn").length;
    out += report.ok ? `\nall checks hold${warned ? ` (${warned} warning${warned === 1 ? "" : "s"})` : ""}\n` : `\n${failed} check${failed === 1 ? "" : "s"} failed\n`;
    writeStdout(out);
  }
  return report.ok ? 0 : 1;
}

/** `airlock doctor`: runs every check and prints the report. @returns 0 when no check failed, 1 otherwise. */
export async function doctorCommand(opts: DoctorOptions): Promise<number> {
  return printReport(await runDoctor(opts), opts.json);
}

/**
 * `airlock mcp check NAME`: the doctor's MCP check for one configured server.
 * @returns 0 when it started and listed its tools, 1 otherwise.
 * @throws AirlockError `config_invalid` (the config does not load), `not_found` (no server of that name: exit 1).
 */
export async function mcpCheckCommand(name: string, opts: DoctorOptions): Promise<number> {
  const { resolveContext } = await import("./context.ts");
  const { AirlockError } = await import("../errors.ts");
  const ctx = await resolveContext(opts);
  if (!ctx.config.mcp_servers[name]) {
    const known = Object.keys(ctx.config.mcp_servers);
    throw new AirlockError("not_found", `no MCP server "${name}" under mcp_servers in ${ctx.configPath ?? "the config (defaults: none)"}; ${known.length ? `configured: ${known.join(", ")}` : "none is configured"}`);
  }
  const check = await mcpCheck(ctx.config, name, { workspace: process.cwd(), dataDir: ctx.dataDir, timeoutS: opts.timeout ?? DEFAULT_MCP_CHECK_S });
  return printReport({ ok: check.status !== "fail", checks: [check] }, opts.json);
}
