/**
 * @module launcher/setup
 * The host-side half of the plan (./plan.ts): probes bubblewrap, gathers the paths to hide, mask
 * and keep visible, prepares the writable roots' repository metadata and opens the seccomp filter,
 * then asks `planSandbox` for the argv. Used by every host process: tools (./spawn.ts), hooks
 * (gate/inspectors/hooks.ts) and MCP servers (tool/mcp/server.ts).
 */
import { closeSync, existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { AirlockError } from "../errors.ts";
import { allCredentialPaths, dataDirSecretFiles, insideTranscripts, transcriptFolders } from "./credentials.ts";
import { sanitizedEnv } from "./env.ts";
import { decideConfinement, planSandbox, TOOL_PROCESS, type BwrapProbe, type Confinement, type HostProcessOptions, type SandboxPlan } from "./plan.ts";
import type { SandboxPolicy } from "./policy.ts";
import { bwrapAvailable, cachedBwrapWorks, openSeccompFilter, unixSocketPlan } from "./probe.ts";
import { findInPath, isInside, resolveRealPath } from "./resolve.ts";
import { reaperMark } from "./reaper.ts";
import { prepareRoot, releaseRoot, type PreparedRoot } from "./roots.ts";

/**
 * Probes bubblewrap (`bwrapPath`: undefined = `bwrap` on `envPath`; null = missing) and decides how a
 * process under `policy` runs (plan.ts {@link decideConfinement}). Never throws: a refusal is a result.
 */
export async function confinementFor(
  policy: SandboxPolicy,
  bwrapPath: string | null | undefined,
  envPath: string | undefined,
  allowUnenforced: boolean,
  options: HostProcessOptions,
): Promise<Confinement> {
  const path = bwrapPath !== undefined ? bwrapPath : findInPath("bwrap", envPath);
  const probe: BwrapProbe = { path, works: await bwrapAvailable(path) };
  return decideConfinement(policy, probe, allowUnenforced, options);
}

/**
 * Does ahead of time what a process's first confined call would otherwise do cold, and runs nothing:
 * reads the probe cache (probe.ts {@link cachedBwrapWorks}; a miss leaves the probe to the first call),
 * compiles the seccomp filter, lists the credential stores of `homes` (default: airlock's HOME) and, on a
 * cache hit, decides a `workspace-write` confinement ({@link confinementFor} with the bubblewrap the cache
 * vouched for, which finds that probe's result in memory and so runs none) and plans (without spawning) a
 * launch under it in an empty temp folder, removed after, hiding `dataDirs` as a call hides them — which
 * starts the reaper (reaper.ts), whose spawn has a launch's stdio and so runs the child-process path a first
 * launch would run cold —, lays out that plan's stdio ({@link extraStdio}), builds (and drops) an unconnected
 * socket, the kind the launch's extra fds use, and loads `node:stream` (the launch's output pipes are Node streams).
 * Resolves to the bubblewrap path the cache vouched for (the plan was made), or undefined on a miss or any
 * failure. Never rejects. The runtime calls it once (through spawn.ts `warmLaunch`), off the path to the first model request.
 */
export async function warmLauncher(homes: readonly (string | undefined)[] = [process.env.HOME], dataDirs: readonly string[] = []): Promise<string | undefined> {
  let dir: string | undefined;
  try {
    closeSync(openSeccompFilter());
    for (const h of homes) allCredentialPaths(h);
    const bwrap = findInPath("bwrap", sanitizedEnv().PATH);
    if (!bwrap || !cachedBwrapWorks(bwrap)) return undefined;
    // the path is given, and its probe result is now in memory (cachedBwrapWorks): no probe runs here
    const confinement = await confinementFor("workspace-write", bwrap, undefined, false, TOOL_PROCESS);
    if (confinement.kind !== "bwrap") return undefined;
    dir = mkdtempSync(path.join(tmpdir(), "airlock-warm-"));
    const setup = await setUpSandbox(confinement, {
      policy: "workspace-write",
      options: TOOL_PROCESS,
      argv: [bwrap],
      cwd: dir,
      writableRoots: [dir],
      homes,
      dataDirs,
      unixSockets: [],
      maxFolders: 10,
      refuse: (why) => new AirlockError("sandbox_unavailable", why),
    });
    try {
      extraStdio(setup);
    } finally {
      closeSeccomp(setup);
      await releaseRoot(setup.prepared);
    }
    // a confined launch's extra fds (info pipe, lifeline) are sockets: load that code too (no fd is opened)
    new (await import("node:net")).Socket().destroy();
    // and its stdout and stderr are Node streams: load node:stream too (nothing else at start loads it
    // since node:crypto left the start path; a first call paid for it: docs/performance.md, third round)
    await import("node:stream");
    return bwrap;
  } catch {
    // only a warm-up: the first call does (and reports) whatever failed here
    return undefined;
  } finally {
    if (dir) rmSync(dir, { recursive: true, force: true });
  }
}

/** `p` through its symlinks, or `p` itself when that fails (a link loop). */
function real(p: string): string {
  try {
    return resolveRealPath("/", p);
  } catch {
    return p;
  }
}

/** The paths a process's confinement hides, masks and keeps visible (absolute real paths, existing). */
export interface ConfinementPaths {
  /** Folders behind an empty tmpfs: the data dirs, then every credential folder not named. */
  hidden: string[];
  /** Files shown empty: every credential file not named, and the data dir's secrets a named path would show. */
  masked: string[];
  /** The named credential paths that exist, bound read-only after the masks. */
  visible: string[];
}

/**
 * What a confined process must not see. Credentials: those of every home in `homes` (each with the
 * account's home from the password database: credentials.ts `allCredentialPaths`), so a process's own
 * `HOME` hides nothing of airlock's. `named` (an MCP server's `credentials`, absolute) stay visible,
 * except the data dir's secrets, which stay masked, and its transcripts folder, which stays hidden,
 * whatever is named.
 */
export function confinementPaths(homes: readonly (string | undefined)[], dataDirs: readonly string[], named: readonly string[] = []): ConfinementPaths {
  const names = named.map(real);
  const keep = (p: string) => !names.includes(real(p));
  const creds = homes.map((h) => allCredentialPaths(h));
  const dirs = dataDirs.filter((d) => existsSync(d)).map(real);
  // a named path in a transcripts folder is never bound: the folder stays hidden inside the hidden data dir
  const visible = names.filter((p) => existsSync(p) && !insideTranscripts(p, dirs));
  // a named path that holds the data dir (`~/`) or lies in it brings its tokens and transcripts back into
  // view: the tokens stay masked, the transcripts folder hidden (again, after the named binds)
  const overlap = dirs.filter((d) => visible.some((v) => isInside(d, v) || isInside(v, d)));
  return {
    hidden: [...dataDirs, ...creds.flatMap((c) => c.dirs).filter(keep), ...transcriptFolders(overlap)].map(real).filter((h) => existsSync(h) && h !== "/"),
    masked: [...new Set([...creds.flatMap((c) => c.files).map(real).filter(keep), ...dataDirSecretFiles(overlap)])],
    visible,
  };
}

/** One process's sandbox, ready to spawn: see {@link setUpSandbox}. */
export interface SandboxSetup extends SandboxPlan {
  /** The open seccomp filter to pass at `fds.seccomp` (when `seccomp`); the caller closes it once spawned. */
  seccompFd?: number;
  /** The reaper's mark (reaper.ts `reaperMark`) to pass at `fds.reaper`; airlock's own fd, never closed by the caller. */
  reaperFd: number;
  /** The prepared roots (workspace-write): recheck (roots.ts `recheckRoot`) between calls, release once the process is gone. */
  prepared: PreparedRoot[];
}

/** What {@link setUpSandbox} needs besides the confinement; a `danger-full-access` process needs only {@link FullAccessRequest}'s part. */
export interface SetupRequest {
  policy: SandboxPolicy;
  options: HostProcessOptions;
  /** The command, `argv[0]` the absolute executable. */
  argv: string[];
  /** The working directory (existing). Made real when confined; used as given under `danger-full-access`. */
  cwd: string;
  /** Confined only: the writable roots (made real here); each must exist. */
  writableRoots: string[];
  /** Confined only: the homes whose credential stores are hidden (the process's `HOME` and airlock's): see {@link confinementPaths}. */
  homes: readonly (string | undefined)[];
  /**
   * airlock's data dir(s): hidden from a confined process; under `danger-full-access` their secrets
   * masked and their transcripts folder hidden (unless `options.readsTranscripts`: hooks).
   */
  dataDirs: readonly string[];
  /** Credential paths kept visible (an MCP server's `credentials`, absolute). */
  namedCredentials?: readonly string[];
  /** Confined only: config `sandbox_unix_sockets`. */
  unixSockets: readonly string[];
  /** Confined only: config `sandbox_scan_max_folders`. */
  maxFolders: number;
  /** Confined only: builds the refusal when the seccomp filter cannot be opened (`why` says so); nothing has run then. */
  refuse: (why: string) => AirlockError;
}

/**
 * Prepares what a bubblewrap launch needs and plans its argv (plan.ts {@link planSandbox}): under
 * `workspace-write` each root's repository metadata (roots.ts `prepareRoot`), and the seccomp filter
 * when no unix socket is kept, and the reaper's mark (starting the reaper on first use). On failure,
 * whatever was prepared is released.
 * @throws AirlockError `tool_failed` (a writable root does not exist), `metadata_scan_limit`
 *   (roots.ts), `req.refuse(…)` (the seccomp filter could not be opened, or the reaper could not be
 *   started) or, for a `danger-full-access` request, `sandbox_unavailable` (the reaper could not be started).
 */
export async function setUpSandbox(confinement: Extract<Confinement, { kind: "bwrap" }>, req: SetupRequest | FullAccessRequest): Promise<SandboxSetup> {
  const { policy, options, argv } = req;
  let reaperFd: number;
  try {
    reaperFd = reaperMark();
  } catch (e) {
    const why = `the reaper, which kills a launch's processes once airlock is gone, could not be started (${(e as Error).message})`;
    throw "refuse" in req ? req.refuse(why) : new AirlockError("sandbox_unavailable", `sandbox policy "${policy}" cannot be enforced: ${why}. Nothing was run.`, { policy });
  }
  if (!confinement.confined || !("writableRoots" in req)) {
    if (confinement.confined) throw new AirlockError("internal", `a confined ${policy} process needs its writable roots, homes and socket list`);
    const plan = planSandbox({
      ...emptyConfined,
      policy,
      confinement,
      options,
      argv,
      cwd: req.cwd,
      writableRoots: [],
      fullAccessMasks: dataDirSecretFiles(req.dataDirs),
      transcriptDirs: transcriptFolders(req.dataDirs),
    });
    return { ...plan, reaperFd, prepared: [] };
  }
  const roots = req.writableRoots.map((r) => resolveRealPath("/", r));
  for (const r of roots) if (!existsSync(r)) throw new AirlockError("tool_failed", `workspace root ${r} does not exist`);
  const prepared: PreparedRoot[] = [];
  if (confinement.prepareRoots) {
    try {
      for (const r of roots) prepared.push(await prepareRoot(r, req.maxFolders));
    } catch (e) {
      await releaseRoot(prepared);
      throw e;
    }
  }
  const paths = confinementPaths(req.homes, req.dataDirs, req.namedCredentials);
  const sockets = unixSocketPlan(req.unixSockets);
  const plan = planSandbox({
    policy,
    confinement,
    options,
    argv,
    cwd: resolveRealPath("/", req.cwd),
    writableRoots: roots,
    mounts: { readOnly: prepared.flatMap((r) => r.readOnly), mountPoints: prepared.flatMap((r) => r.mountPoints), locked: prepared.flatMap((r) => r.locked) },
    hiddenPaths: paths.hidden,
    maskedFiles: paths.masked,
    visiblePaths: paths.visible,
    fullAccessMasks: [],
    runtimePaths: [argv[0]!, ...argv.slice(1).filter((a) => path.isAbsolute(a) && existsSync(a))].map((p) => resolveRealPath("/", p)),
    sockets,
  });
  if (!plan.seccomp) return { ...plan, reaperFd, prepared };
  try {
    return { ...plan, seccompFd: openSeccompFilter(), reaperFd, prepared };
  } catch (e) {
    await releaseRoot(prepared);
    throw req.refuse(`the seccomp filter could not be prepared (${(e as Error).message})`);
  }
}

/** What a `danger-full-access` process's setup needs (hooks): the fields of {@link SetupRequest} not marked "confined only". */
export type FullAccessRequest = Pick<SetupRequest, "policy" | "options" | "argv" | "cwd" | "dataDirs">;

/** The confined-only fields of a request, empty (a `danger-full-access` plan ignores them). */
const emptyConfined = {
  mounts: { readOnly: [], mountPoints: [], locked: [] },
  hiddenPaths: [],
  maskedFiles: [],
  visiblePaths: [],
  runtimePaths: [],
  sockets: { sockets: [], socketDirs: [] },
};

/**
 * The child's stdio entries past 0–2 for a setup (`child_process.spawn`'s `stdio[3…]`), in its fd
 * layout's order: `"pipe"` for the info fd and the lifeline, the open filter fd for the seccomp slot,
 * the reaper's mark for the reaper slot. No setup (no bubblewrap): none.
 */
export function extraStdio(setup: Pick<SandboxSetup, "fds" | "seccompFd" | "reaperFd"> | undefined): ("pipe" | number)[] {
  if (!setup) return [];
  const slots: ("pipe" | number)[] = [];
  const { info, seccomp, lifeline } = setup.fds;
  if (info !== undefined) slots[info - 3] = "pipe";
  if (seccomp !== undefined) {
    if (setup.seccompFd === undefined) throw new AirlockError("internal", "the sandbox plan has a seccomp slot but no filter fd was opened");
    slots[seccomp - 3] = setup.seccompFd;
  }
  slots[lifeline - 3] = "pipe";
  slots[setup.fds.reaper - 3] = setup.reaperFd;
  return slots;
}

/** Closes the setup's seccomp fd, if any (after the spawn, or when it failed). Never throws. */
export function closeSeccomp(setup: Pick<SandboxSetup, "seccompFd">): void {
  if (setup.seccompFd === undefined) return;
  try {
    closeSync(setup.seccompFd);
  } catch {
    // closed already
  }
}
