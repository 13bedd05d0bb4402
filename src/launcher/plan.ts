/**
 * @module launcher/plan
 * The one confinement plan for every host process airlock starts — a tool's shell or interpreter, a
 * PreToolUse hook, an MCP server. Pure: policy + what the host offers + the kind's options → whether
 * bubblewrap runs (or a refusal), the child's extra fds, what to prepare, and the bubblewrap argv.
 * The host-side work around it (probing, preparing roots, the seccomp fd) is in ./setup.ts.
 */
import { bwrapArgs } from "./bwrap.ts";
import { isConfined, type SandboxPolicy } from "./policy.ts";

/** What differs between the kinds of host process: every difference is one of these options. */
export interface HostProcessOptions {
  /**
   * bubblewrap reports its namespace init's host pid on a pipe (`--info-fd`), so the caller can wait
   * until the whole namespace is gone (tools: their result waits for it). Hooks and MCP servers: no.
   */
  infoFd: boolean;
  /**
   * Under `danger-full-access`, bubblewrap is required: where it cannot run, nothing runs unless
   * `allow_unenforced` (hooks). False: such a process runs without it, untied to airlock's life (tools, MCP).
   */
  fullAccessNeedsBwrap: boolean;
  /** Under `danger-full-access`, no capabilities and a minimal `/dev` of its own (hooks; bwrap.ts `hardenFullAccess`). */
  hardenFullAccess: boolean;
  /**
   * Under `danger-full-access`, the data dir's transcripts folder stays in view (hooks: `transcript_path`
   * is the point of it). False: it is behind an empty tmpfs. A confined process never sees the data dir.
   */
  readsTranscripts: boolean;
}

/** A tool's process (shell, interpreters): its result waits for the namespace's init to be gone. */
export const TOOL_PROCESS: HostProcessOptions = { infoFd: true, fullAccessNeedsBwrap: false, hardenFullAccess: false, readsTranscripts: false };
/** A hook: network and files as they are (the session transcripts included), but no capabilities, and never unconfined by surprise. */
export const HOOK_PROCESS: HostProcessOptions = { infoFd: false, fullAccessNeedsBwrap: true, hardenFullAccess: true, readsTranscripts: true };
/** An MCP server: long-lived, shared; confined by its `sandbox` policy like a tool. */
export const MCP_SERVER_PROCESS: HostProcessOptions = { infoFd: false, fullAccessNeedsBwrap: false, hardenFullAccess: false, readsTranscripts: false };

/** The outcome of the bubblewrap probe: the binary (null: not found) and whether it can create its namespaces here. */
export interface BwrapProbe {
  path: string | null;
  works: boolean;
}

/**
 * How a host process runs, decided before anything is prepared:
 * - `refuse`: the policy needs bubblewrap, it cannot run, and `allow_unenforced` is off; `why` says which part failed.
 * - `direct`: a plain child process, no bubblewrap. `unconfined`: a confining policy went unenforced
 *   (`allow_unenforced`); otherwise a `danger-full-access` process not tied to airlock's life.
 * - `bwrap`: under bubblewrap; `confined` for `read-only` / `workspace-write`; `prepareRoots` when
 *   the writable roots' repository metadata must be prepared and checked (`workspace-write`).
 */
export type Confinement =
  | { kind: "refuse"; why: string }
  | { kind: "direct"; unconfined: boolean; why: string }
  | { kind: "bwrap"; confined: boolean; prepareRoots: boolean; bwrapPath: string };

/** Why bubblewrap cannot run, in words, for refusals and warnings. */
function bwrapMissing(bwrap: BwrapProbe): string {
  return bwrap.path ? `bubblewrap at ${bwrap.path} cannot create the namespaces it needs here` : "bubblewrap (bwrap) was not found on PATH";
}

/**
 * Decides how a process under `policy` runs (see {@link Confinement}). Pure.
 * @param bwrap the probe's outcome (probe.ts `bwrapAvailable`).
 * @param allowUnenforced config `allow_unenforced`.
 */
export function decideConfinement(policy: SandboxPolicy, bwrap: BwrapProbe, allowUnenforced: boolean, options: HostProcessOptions): Confinement {
  const confined = isConfined(policy);
  if (bwrap.works && bwrap.path) return { kind: "bwrap", confined, prepareRoots: policy === "workspace-write", bwrapPath: bwrap.path };
  const why = bwrapMissing(bwrap);
  const needed = confined || options.fullAccessNeedsBwrap;
  if (needed && !allowUnenforced) return { kind: "refuse", why };
  return { kind: "direct", unconfined: confined, why };
}

/** The child's fds past stdio, in order from 3: the info pipe, the seccomp filter, the lifeline socket, the reaper's mark. */
export interface FdLayout {
  /** bubblewrap's `--info-fd` (a pipe airlock reads). */
  info?: number;
  /** bubblewrap's `--seccomp` (the filter fd airlock opened: probe.ts `openSeccompFilter`). */
  seccomp?: number;
  /** The lifeline socket (bwrap.ts `withLifeline`): airlock keeps its end, unwritten, until the tree is gone. */
  lifeline: number;
  /** The reaper's mark (reaper.ts `reaperMark`): its holders are killed once airlock is gone. Always `lifeline + 1`. */
  reaper: number;
}

/** The fd numbers the child gets: 3, 4, … in the order info, seccomp, lifeline, reaper, skipping those not used. Pure. */
export function fdLayout(info: boolean, seccomp: boolean): FdLayout {
  let next = 3;
  const out: Partial<FdLayout> = {};
  if (info) out.info = next++;
  if (seccomp) out.seccomp = next++;
  return { ...out, lifeline: next, reaper: next + 1 };
}

/** The repository-metadata mounts of the prepared writable roots (roots.ts `PreparedRoot`), merged. */
export interface RepositoryMounts {
  readOnly: string[];
  mountPoints: string[];
  locked: string[];
}

/** Everything {@link planSandbox} needs; every path absolute and real, every listed path existing. */
export interface SandboxRequest {
  policy: SandboxPolicy;
  /** From {@link decideConfinement}: runs under bubblewrap. */
  confinement: Extract<Confinement, { kind: "bwrap" }>;
  options: HostProcessOptions;
  /** The command, `argv[0]` the absolute executable. */
  argv: string[];
  cwd: string;
  /** Writable under `workspace-write`, read-only under `read-only`; unused under `danger-full-access`. */
  writableRoots: string[];
  /** Confined only: the prepared roots' metadata mounts (empty unless `prepareRoots`). */
  mounts: RepositoryMounts;
  /** Confined only: folders hidden behind an empty tmpfs (the data dir, credential folders). */
  hiddenPaths: string[];
  /** Confined only: files shown empty (credential files; the data dir's secrets an MCP server's named path would show). */
  maskedFiles: string[];
  /** Confined only: paths bound read-only after the masks (an MCP server's named `credentials`). */
  visiblePaths: string[];
  /** `danger-full-access` only: files shown empty (the data dir's tokens and database). */
  fullAccessMasks: string[];
  /**
   * `danger-full-access` only: the data dirs' transcripts folders (credentials.ts `transcriptFolders`),
   * behind an empty tmpfs unless `options.readsTranscripts` (hooks).
   */
  transcriptDirs?: string[];
  /** Confined only: the executable and absolute paths among the arguments (bwrap.ts `runtimePaths`). */
  runtimePaths: string[];
  /** Confined only: the unix sockets bound in (probe.ts `unixSocketPlan`); none = the seccomp filter applies. */
  sockets: { sockets: string[]; socketDirs: string[] };
}

/** The plan's result: the argv to spawn and the fd layout the spawn must give the child. */
export interface SandboxPlan {
  argv: string[];
  fds: FdLayout;
  /** True when the spawn must pass the seccomp filter fd (at `fds.seccomp`). */
  seccomp: boolean;
}

/**
 * The bubblewrap argv and fd layout for one process. Pure: no filesystem access, no spawning.
 * A confined process with no unix socket to keep gets the seccomp filter; every bubblewrap process
 * gets the lifeline. Returns `{argv: [bwrapPath, ...flags, "--", ...lifeline wrapper, ...argv], fds, seccomp}`.
 */
export function planSandbox(req: SandboxRequest): SandboxPlan {
  const { policy, confinement, options } = req;
  const seccomp = confinement.confined && req.sockets.sockets.length === 0;
  const fds = fdLayout(options.infoFd, seccomp);
  const common = { policy, argv: req.argv, cwd: req.cwd, bwrapPath: confinement.bwrapPath, lifelineFd: fds.lifeline, reaperFd: fds.reaper, ...(fds.info !== undefined ? { infoFd: fds.info } : {}) };
  if (!confinement.confined) {
    const hidden = options.readsTranscripts ? [] : (req.transcriptDirs ?? []);
    return {
      argv: bwrapArgs({ ...common, writableRoots: [], maskedFiles: req.fullAccessMasks, ...(hidden.length ? { hiddenPaths: hidden } : {}), ...(options.hardenFullAccess ? { hardenFullAccess: true } : {}) }),
      fds,
      seccomp,
    };
  }
  const argv = bwrapArgs({
    ...common,
    writableRoots: req.writableRoots,
    readOnlyPaths: [...req.mounts.readOnly, ...req.visiblePaths],
    lockedPaths: req.mounts.locked,
    mountPoints: req.mounts.mountPoints,
    hiddenPaths: req.hiddenPaths,
    maskedFiles: req.maskedFiles,
    runtimePaths: req.runtimePaths,
    ...(fds.seccomp !== undefined ? { seccompFd: fds.seccomp } : {}),
    unixSockets: req.sockets.sockets,
    socketDirs: req.sockets.socketDirs,
  });
  return { argv, fds, seccomp };
}
