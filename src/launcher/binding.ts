/**
 * @module launcher/binding
 * What an elevation approval is bound to: the exact call — tool, arguments, working directory and
 * the executable the launcher will really run. The gate keys one-shot approvals on this so an
 * approval is never reused for another argv, cwd or executable (SPEC §9).
 */
import { sanitizedEnv } from "./env.ts";
import { resolveExecutable, resolveRealPath, resolveWorkspacePath } from "./resolve.ts";

/** The program each host-process tool runs (`argv[0]` before PATH lookup). */
export function toolExecutable(tool: string): string | null {
  switch (tool) {
    case "developer__shell":
      return "bash";
    case "interpreter__python":
      return "python3";
    case "interpreter__js":
      return process.execPath;
    default:
      return null;
  }
}

function canonical(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(canonical);
  if (v && typeof v === "object") return Object.fromEntries(Object.keys(v).sort().map((k) => [k, canonical((v as Record<string, unknown>)[k])]));
  return v;
}

/**
 * A stable fingerprint (sha256 hex) of one call: `{tool, args (keys sorted), cwd (real path of the
 * workspace), executable (real path of what the launcher would run, via the sanitized PATH)}`.
 * Two calls share a binding only when all four are equal.
 */
export function callBinding(o: { tool: string; args: unknown; workspace: string }): string {
  const exe = toolExecutable(o.tool);
  const executable = exe ? resolveExecutable(exe, sanitizedEnv().PATH) : null;
  const payload = JSON.stringify(canonical({ tool: o.tool, args: o.args, cwd: resolveRealPath("/", o.workspace), executable }));
  return new Bun.CryptoHasher("sha256").update(payload).digest("hex"); // not node:crypto: not loaded at start
}

/** What a host tool call will really touch, for the security floor: never the model's spelling. */
export interface ResolvedCall {
  /** Real path of the program run (bash, python3, airlock/bun), null for file tools or when not found. */
  executable: string | null;
  /** Real path of the working directory (the workspace). */
  cwd: string;
  /** File tools: the real target of `args.path` and whether it is inside the workspace. */
  path?: { real: string; inside: boolean };
}

/** Resolves a host tool call's executable, cwd and (file tools) target path. Shape: {@link ResolvedCall}. */
export function resolvedCall(o: { tool: string; args: unknown; workspace: string }): ResolvedCall {
  const exe = toolExecutable(o.tool);
  const out: ResolvedCall = { executable: exe ? resolveExecutable(exe, sanitizedEnv().PATH) : null, cwd: resolveRealPath("/", o.workspace) };
  const p = (o.args as { path?: unknown } | null)?.path;
  if (o.tool.startsWith("developer__") && typeof p === "string") out.path = resolveWorkspacePath(o.workspace, p);
  return out;
}
