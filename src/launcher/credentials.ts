/**
 * @module launcher/credentials
 * The one list of credential stores under a user's home, and the rules built on it. Four users share
 * it: the launcher's masks for every host process (src/launcher/setup.ts), the security floor's read
 * asks, the file tools (through the floor) and an MCP server's named `credentials`. Also: which `/proc` files carry
 * another process's secrets, and the test for airlock's own data dir (refused to the file tools).
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { TRANSCRIPTS_DIR } from "../config/paths.ts";
import { DATA_DIR_SECRETS } from "./bwrap.ts";
import { isInside, resolveRealPath } from "./resolve.ts";

/** One credential store: a path relative to HOME, whether it is a folder, and what it holds. */
export interface CredentialEntry {
  /** Relative to HOME, no leading `./`, e.g. `.config/gh`. */
  rel: string;
  dir: boolean;
  /** Shown in the floor's reason, e.g. "GitHub CLI tokens". */
  kind: string;
  /**
   * True when the same relative path is a credential wherever it sits (another user's home, a copied
   * home); false when only the one under HOME is (a project's own `.npmrc` holds registry settings).
   */
  anywhere: boolean;
}

/** Every credential store airlock knows. Folders are hidden whole from confined processes; files are shown empty. */
export const CREDENTIALS: readonly CredentialEntry[] = [
  { rel: ".ssh", dir: true, kind: "SSH keys", anywhere: true },
  { rel: ".aws", dir: true, kind: "AWS credentials", anywhere: true },
  { rel: ".gnupg", dir: true, kind: "GnuPG keys", anywhere: true },
  { rel: ".config/gcloud", dir: true, kind: "gcloud credentials", anywhere: true },
  { rel: ".kube", dir: true, kind: "Kubernetes credentials", anywhere: true },
  { rel: ".docker", dir: true, kind: "Docker registry credentials", anywhere: true },
  { rel: ".azure", dir: true, kind: "Azure credentials", anywhere: true },
  { rel: ".config/gh", dir: true, kind: "GitHub CLI tokens", anywhere: true },
  { rel: ".config/hub", dir: false, kind: "GitHub hub token", anywhere: true },
  { rel: ".password-store", dir: true, kind: "pass password store", anywhere: true },
  { rel: ".terraform.d/credentials.tfrc.json", dir: false, kind: "Terraform Cloud token", anywhere: true },
  { rel: ".cargo/credentials", dir: false, kind: "Cargo registry token", anywhere: true },
  { rel: ".cargo/credentials.toml", dir: false, kind: "Cargo registry token", anywhere: true },
  { rel: ".gem/credentials", dir: false, kind: "RubyGems API key", anywhere: true },
  { rel: ".config/git/credentials", dir: false, kind: "git credentials", anywhere: true },
  { rel: ".git-credentials", dir: false, kind: "git credentials", anywhere: true },
  { rel: ".netrc", dir: false, kind: "netrc credentials", anywhere: true },
  { rel: "_netrc", dir: false, kind: "netrc credentials", anywhere: true },
  { rel: ".pgpass", dir: false, kind: "PostgreSQL passwords", anywhere: true },
  { rel: ".my.cnf", dir: false, kind: "MySQL client passwords", anywhere: false },
  { rel: ".vault-token", dir: false, kind: "Vault token", anywhere: true },
  { rel: ".npmrc", dir: false, kind: "npm registry token", anywhere: false },
  { rel: ".yarnrc.yml", dir: false, kind: "Yarn registry token", anywhere: false },
  { rel: ".pypirc", dir: false, kind: "PyPI upload token", anywhere: true },
  { rel: ".config/pip/pip.conf", dir: false, kind: "pip index credentials", anywhere: false },
  // Claude Code's OAuth token (`.credentials.json`), its conversations (`projects/`), and the user settings whose
  // hooks airlock runs unconfined (`hooks.import_claude_settings`); a project's own `.claude` is not this one
  { rel: ".claude", dir: true, kind: "Claude Code credentials, conversations and user hooks", anywhere: false },
];

/** The credential folders under HOME (relative), hidden behind an empty tmpfs in every confined process. */
export const CREDENTIAL_DIRS: readonly string[] = CREDENTIALS.filter((c) => c.dir).map((c) => c.rel);
/** The credential files under HOME (relative), shown empty in every confined process. */
export const CREDENTIAL_FILES: readonly string[] = CREDENTIALS.filter((c) => !c.dir).map((c) => c.rel);

/**
 * The existing credential folders and files under `home` (absolute paths, spelled under `home`; a
 * symlink counts as what it leads to, as dotfile managers link them). `home` missing or relative: none.
 */
export function credentialPaths(home: string | undefined): { dirs: string[]; files: string[] } {
  if (!home || !path.isAbsolute(home)) return { dirs: [], files: [] };
  const kind = (p: string) => {
    try {
      return statSync(p);
    } catch {
      return undefined;
    }
  };
  return {
    dirs: CREDENTIAL_DIRS.map((d) => path.join(home, d)).filter((p) => kind(p)?.isDirectory()),
    files: CREDENTIAL_FILES.map((f) => path.join(home, f)).filter((p) => kind(p)?.isFile()),
  };
}

/**
 * Every home whose credential stores are hidden from confined processes: `envHome` (airlock's HOME)
 * when absolute, and the account's home from the password database (a CI job or a service may set
 * HOME elsewhere, or not at all, while `~root/.ssh` stays where it is). Absolute paths, no duplicates.
 */
export function credentialHomes(envHome: string | undefined): string[] {
  const homes: string[] = [];
  if (envHome && path.isAbsolute(envHome)) homes.push(envHome);
  const account = accountHome();
  if (account && !homes.includes(account)) homes.push(account);
  return homes;
}

let accountHomeCache: { uid: number; home: string | undefined } | undefined;

/**
 * This process's home in `/etc/passwd` (read once per uid; `os.userInfo()` in Bun reports `$HOME`
 * instead). Undefined when the uid has no line there (a directory service) or the file is unreadable.
 */
function accountHome(): string | undefined {
  const uid = process.getuid?.() ?? -1;
  if (accountHomeCache?.uid === uid) return accountHomeCache.home;
  let home: string | undefined;
  try {
    for (const line of readFileSync("/etc/passwd", "utf8").split("\n")) {
      const f = line.split(":");
      if (f.length >= 7 && Number(f[2]) === uid && f[5] && path.isAbsolute(f[5])) {
        home = f[5];
        break;
      }
    }
  } catch {
    // unreadable: only HOME counts
  }
  accountHomeCache = { uid, home };
  return home;
}

/** {@link credentialPaths} of every home in {@link credentialHomes}`(envHome)`, merged without duplicates. */
export function allCredentialPaths(envHome: string | undefined): { dirs: string[]; files: string[] } {
  const each = credentialHomes(envHome).map(credentialPaths);
  return { dirs: [...new Set(each.flatMap((c) => c.dirs))], files: [...new Set(each.flatMap((c) => c.files))] };
}

/**
 * The credential paths to keep visible for one MCP server that names them
 * (`mcp_servers.<name>.credentials`): each entry made absolute (`~` → `home`, relative → against `home`).
 */
export function expandCredentialPaths(list: readonly string[], home: string | undefined): string[] {
  const h = home && path.isAbsolute(home) ? home : "/";
  return list.map((p) => (p === "~" ? h : p.startsWith("~/") ? path.join(h, p.slice(2)) : path.resolve(h, p)));
}

const ANYWHERE = CREDENTIALS.filter((c) => c.anywhere).map((c) => ({
  c,
  re: new RegExp(`(^|/)${c.rel.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}${c.dir ? "(/|$)" : "$"}`),
}));

/** The list's absolute paths under one HOME (the floor judges many words against the same HOME). */
let homeCache: { home: string; list: { c: CredentialEntry; abs: string }[] } | undefined;
function underHome(home: string): { c: CredentialEntry; abs: string }[] {
  if (homeCache?.home !== home) homeCache = { home, list: CREDENTIALS.map((c) => ({ c, abs: path.join(home, c.rel) })) };
  return homeCache.list;
}

/**
 * Why `p` is (or lies inside) a listed credential store, or null. `p` is an absolute path or one
 * starting `~/`; `home` is the real HOME. A store matches under `home`, and those marked `anywhere`
 * match at any depth. Inside `~/.ssh`, public keys (`*.pub`) are not credentials.
 */
export function credentialStoreKind(p: string, home: string): string | null {
  const norm = path.posix.normalize(p.startsWith("~/") || p === "~" ? home + p.slice(1) : p);
  if (/(^|\/)\.ssh\/[^/]+\.pub$/.test(norm)) return null;
  if (isInside(norm, home)) {
    for (const { c, abs } of underHome(home)) if (norm === abs || (c.dir && isInside(norm, abs))) return c.kind;
  }
  for (const { c, re } of ANYWHERE) if (re.test(norm)) return c.kind;
  return null;
}

/**
 * Why reading `spelled` reads another process's secrets, or null: `/proc/<pid>/environ` or
 * `/proc/<pid>/mem` (also under `task/<tid>/`), whatever spells the pid — a number, `$PPID`, a glob,
 * `self/../N`. `/proc/self/…` and `/proc/thread-self/…` (the reading process itself) are not.
 * `spelled` is normalised lexically; pass an absolute path (resolve a relative one against its cwd first).
 */
export function procSecretKind(spelled: string): string | null {
  const norm = path.posix.normalize(spelled);
  const m = /^\/proc\/([^/]+)\/(?:task\/[^/]+\/)?(environ|mem)$/.exec(norm);
  if (!m || m[1] === "self" || m[1] === "thread-self") return null;
  return m[2] === "environ" ? "another process's environment (airlock's own keys live there)" : "another process's memory";
}

/**
 * True when the real path `real` lies in airlock's data dir `dataDir` (its tokens and database):
 * the file tools refuse it. A workspace inside the data dir stays usable: paths inside `workspace`
 * then are not refused (as bubblewrap shows a root inside a hidden folder). All three are real paths.
 */
export function insideDataDir(real: string, dataDir: string, workspace: string): boolean {
  if (!isInside(real, dataDir)) return false;
  return !(isInside(workspace, dataDir) && workspace !== dataDir && isInside(real, workspace));
}

/**
 * The session transcripts folder (`<dir>/transcripts`, config/paths.ts `TRANSCRIPTS_DIR`) of each of
 * `dirs` that has one, as absolute real paths: hidden from every tool process and MCP server (an empty
 * tmpfs under `danger-full-access`; inside the hidden data dir when confined), readable by hooks.
 */
export function transcriptFolders(dirs: readonly string[]): string[] {
  return dirs.map((d) => path.join(d, TRANSCRIPTS_DIR)).filter((f) => existsSync(f)).map((f) => resolveRealPath("/", f));
}

/** True when `real` (a real path) is a transcripts folder of one of `dirs` or lies in one. */
export function insideTranscripts(real: string, dirs: readonly string[]): boolean {
  return transcriptFolders(dirs).some((t) => isInside(real, t));
}

/**
 * What a process killed mid-write leaves beside the secrets: a token's temporary hard link
 * (`api-token.tmp-<pid>-<hex>`, `approver-token.tmp-<pid>-<hex>`: config/paths.ts createToken, killed between
 * its `link` and `unlink`) and the config cache's temporary file (`config-cache.json.<pid>.<ms>.tmp`,
 * cli/early-request.ts). Each holds a secret's bytes under a name `DATA_DIR_SECRETS` does not list.
 */
const SECRET_LEFTOVER = /^(?:(?:api|approver)-token\.tmp-|config-cache\.json\..*\.tmp$)/;

/**
 * The data dir's token and database files (`DATA_DIR_SECRETS`) and the secrets' leftover temporary files
 * ({@link SECRET_LEFTOVER}) that exist in each of `dirs`, as absolute real paths: what every bubblewrap launch
 * (tools, hooks, MCP servers) shows as empty. A data dir that does not exist, or that this process may not list,
 * adds no leftovers.
 * @throws Error (errno) when listing a data dir fails otherwise (EMFILE, EIO…): nothing is launched without its masks.
 */
export function dataDirSecretFiles(dirs: readonly string[]): string[] {
  return dirs
    .flatMap((d) => [...DATA_DIR_SECRETS.map((f) => path.join(d, f)), ...secretLeftovers(d)])
    .filter((f) => existsSync(f))
    .map((f) => resolveRealPath("/", f));
}

function secretLeftovers(dir: string): string[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    // none there, or a folder this process may not list: neither may the processes it starts (the same user or
    // fewer rights), and a leftover's name holds 48 random bits (a token's) or a pid and a ms time it cannot list to find
    if (code === "ENOENT" || code === "ENOTDIR" || code === "EACCES") return [];
    throw e;
  }
  return names.filter((n) => SECRET_LEFTOVER.test(n)).map((n) => path.join(dir, n));
}
