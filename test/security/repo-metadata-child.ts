/**
 * @module test/security/repo-metadata-child
 * Runs airlock's host tools (through the real launcher and bubblewrap) or the security floor plus a
 * file tool, as whichever user started it, for test/security/repository-metadata.test.ts. Reads one
 * JSON job from argv[2] and prints one JSON line with the results.
 *
 * Jobs: `{op: "tool", tool, args, workspace, sandbox}` → the tool's result (or `{error}`);
 * `{op: "floor-writes", workspace, writes: [{path, content}]}` → per write the floor's verdict, and
 * the write done only when the floor allows it (as the gate would in `autonomous` mode).
 */
import { securityFloor } from "../../src/gate/inspectors/security-floor.ts";
import { hostTools } from "../../src/tool/host-tools.ts";
import { makeToolContext, runTool } from "../fixtures/tool-context.ts";

const job = JSON.parse(process.argv[2]!) as
  | { op: "tool"; tool: string; args: unknown; workspace: string; sandbox: "read-only" | "workspace-write" }
  | { op: "floor-writes"; workspace: string; writes: { path: string; content: string }[] };

if (job.op === "tool") {
  const tool = hostTools().find((t) => t.name === job.tool)!;
  const ctx = makeToolContext({ workspace: job.workspace, sandbox: job.sandbox });
  try {
    console.log(JSON.stringify(await runTool(tool, job.args, ctx)));
  } catch (e) {
    console.log(JSON.stringify({ error: (e as Error).message }));
  }
} else {
  const write = hostTools().find((t) => t.name === "developer__write_file")!;
  const ctx = makeToolContext({ workspace: job.workspace, sandbox: "workspace-write" });
  const out: { path: string; verdict: string; userProof?: boolean; reason?: string; written: boolean; error?: string }[] = [];
  for (const w of job.writes) {
    const args = { path: w.path, content: w.content };
    const v = securityFloor(write, args, { workspace: job.workspace, policy: "workspace-write" });
    let written = false;
    let error: string | undefined;
    if (v.kind === "allow") {
      try {
        await runTool(write, args, ctx);
        written = true;
      } catch (e) {
        error = (e as Error).message;
      }
    }
    out.push({ path: w.path, verdict: v.kind, userProof: v.kind === "ask" ? v.userProof : undefined, reason: v.kind === "ask" ? v.reason : undefined, written, error });
  }
  console.log(JSON.stringify(out));
}
