/**
 * @module test/security/sandbox-never-holds-the-reaper-mark.test
 * A confined command, a hook or an MCP server's tool can never hold the reaper's mark
 * (launcher/reaper.ts): once airlock ends, the reaper SIGKILLs every process holding it, so a process
 * that held it could hand it on (a unix socket's SCM_RIGHTS to a host process that keeps received
 * fds) and get a process that is none of airlock's launches killed. Attack seen: the lifeline's
 * background shell (bwrap.ts `withLifeline`) was forked before the mark was closed, so it kept the
 * mark all along and the command reopened it through `/proc/<that shell>/fd/<n>`. Every process the
 * command can see is searched for an fd on the mark, which is then opened. Root and nobody, through
 * the real launcher, hook runner and MCP manager, and real bubblewrap.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { testUsers } from "../as-user.ts";
import { ownedDir, probeEnv, removeTempDirs, runProbe, tempBase } from "./probe.ts";

afterAll(removeTempDirs);

/** Prints `TAKEN <link>` for every fd on the mark it could open, then `end`. */
const ATTACK = [
  "for f in /proc/[0-9]*/fd/*; do",
  '  case "$(readlink "$f" 2>/dev/null)" in *airlock-reaper-*) (exec 9<"$f") 2>/dev/null && echo "TAKEN $f";; esac',
  "done; echo end",
].join("\n");

describe("no confined process can take the reaper's mark", () => {
  for (const user of testUsers()) {
    for (const policy of ["read-only", "workspace-write", "danger-full-access"] as const) {
      test(`a ${policy} command, as ${user.name}`, async () => {
        const base = tempBase("airlock-mark-");
        const home = ownedDir(user, base, "home");
        const ws = ownedDir(user, base, "ws");
        const r = await runProbe(user, { kind: "launch", policy, argv: ["sh", "-c", ATTACK], cwd: ws }, probeEnv(home));
        expect({ stdout: r.stdout, exit: r.exit_code }).toEqual({ stdout: "end\n", exit: 0 });
      }, 60_000);
    }
    test(`a hook, as ${user.name}`, async () => {
      const base = tempBase("airlock-mark-");
      const home = ownedDir(user, base, "home");
      const ws = ownedDir(user, base, "ws");
      // the hook's stdout is its verdict: what it finds goes to stderr, the verdict's reason
      const v = await runProbe(user, { kind: "hook", command: `{ ${ATTACK} ; } >&2; exit 2`, cwd: ws }, probeEnv(home));
      expect({ kind: v.kind, reason: v.reason }).toEqual({ kind: "deny", reason: "end" });
    }, 60_000);
    test(`an MCP server's tool, as ${user.name}`, async () => {
      const base = tempBase("airlock-mark-");
      const home = ownedDir(user, base, "home");
      const ws = ownedDir(user, base, "ws");
      const r = await runProbe(user, { kind: "mcp", policy: "workspace-write", script: ATTACK, cwd: ws }, probeEnv(home));
      expect(JSON.stringify(r.stdout)).toContain("end");
      expect(JSON.stringify(r.stdout)).not.toContain("TAKEN /proc");
    }, 60_000);
  }
});
