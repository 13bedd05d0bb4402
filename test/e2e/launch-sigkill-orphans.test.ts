/**
 * @module test/e2e/launch-sigkill-orphans
 * A process killed with SIGKILL in the middle of confined launches leaves no process behind, as root
 * and as nobody. Each round starts a process (test/fixtures/launch-loop.ts) that runs several
 * `workspace-write` launches at once, again and again, and SIGKILLs it a varied time after it started
 * launching, so kills land in every phase of a launch: before bubblewrap runs, between its clone and
 * its namespace init's release (the window in which bubblewrap's parent, armed with
 * `--die-with-parent`, dies and leaves its init blocked forever before it runs anything), during
 * the sandbox's setup, and while the command runs. After every round, every process whose argv
 * carries the round's marker (bubblewrap's own argv does too) must be gone, and after the last round
 * every process of every round. A survivor never goes away on its own, so the wait for them is long
 * (20 s) and no expectation depends on timing.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { sharedTempDir, testUsers } from "../as-user.ts";
import { killPids } from "../cleanup.ts";

const ROUNDS = Number(process.env.AIRLOCK_ORPHAN_ROUNDS ?? 24);
const PARALLEL = 6;
const LOOP = join(import.meta.dir, "../fixtures/launch-loop.ts");
const BUN = process.execPath;

const left: number[] = [];
// survivors a failed check named: this test's own processes, killed by pid
afterAll(() => killPids(left));

/** Pids whose argv carries `marker`. */
function marked(marker: string): number[] {
  const out: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (readFileSync(`/proc/${name}/cmdline`, "utf8").includes(marker)) out.push(Number(name));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** Describes `pids` for a failure message: argv, parent and state. */
function describePids(pids: number[]): string {
  return pids
    .map((pid) => {
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
        const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
        return `${pid} (state ${f[0]}, ppid ${f[1]}): ${readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ").slice(0, 60)}…`;
      } catch {
        return `${pid} (gone)`;
      }
    })
    .join("\n");
}

describe.each(testUsers())("a launching process killed with SIGKILL leaves nothing behind, as $name", (user) => {
  test(
    `${ROUNDS} rounds of ${PARALLEL} concurrent confined launches, killed at varied points`,
    async () => {
      const dir = sharedTempDir("airlock-orphan-");
      const survivors: string[] = [];
      const prefix = `${user.uid}${String(process.pid).padStart(7, "0")}`;
      for (let round = 0; round < ROUNDS; round++) {
        // a marker unique to the round and the user, in the argv of every process the round starts
        const marker = `${prefix}${String(round).padStart(3, "0")}9`;
        const ws = join(dir, `ws-${round}`);
        mkdirSync(ws, { mode: 0o777 });
        const proc = Bun.spawn([...user.prefix, BUN, LOOP, ws, marker, String(PARALLEL)], { cwd: dir, stdout: "pipe", stderr: "inherit", env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: dir } });
        const reader = proc.stdout.getReader();
        const first = await reader.read();
        expect(new TextDecoder().decode(first.value)).toContain("go");
        // kill points spread over the first launches: 0–120 ms after the loop starts, by round
        await Bun.sleep((round * 37) % 121);
        proc.kill("SIGKILL");
        await proc.exited;
        let alive = marked(marker);
        for (let waited = 0; alive.length > 0 && waited < 20_000; waited += 50) {
          await Bun.sleep(50);
          alive = marked(marker);
        }
        if (alive.length > 0) {
          left.push(...alive);
          survivors.push(`round ${round}:\n${describePids(alive)}`);
        }
      }
      // once more for every round: a process caught in exec shows an empty argv for a moment, so one
      // could pass its round's check and still be left (its `sleep 0.<marker>` argv carries the prefix)
      const late = marked(`0.${prefix}`);
      if (late.length > 0) {
        left.push(...late);
        survivors.push(`after the last round:\n${describePids(late)}`);
      }
      expect(survivors, "processes that outlived the killed launcher").toEqual([]);
    },
    600_000,
  );
});
