/**
 * @module test/security/process-lifetime-start
 * A host process dies with airlock even when airlock is killed in the instant after spawning it,
 * before bubblewrap's `--die-with-parent` holds (found by the SIGKILL crash test: bwrap and its
 * `sleep` survived a killed `serve` in 2 of 6 runs; a parent killing itself right after spawn left
 * 24 of 30 trees running). The parent here calls the real `launch()` and SIGKILLs itself in the
 * same tick, so every run hits the gap; the lifeline (bwrap.ts `withLifeline`) or the reaper (reaper.ts) must end
 * the tree (2026-12-02: it passes with the lifeline removed, the reaper ending the tree);
 * with both removed the marker is written in the first try.
 */
import { describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { sharedTempDir, testUsers } from "../as-user.ts";
import { processesWith } from "../processes.ts";

const REPO = join(import.meta.dir, "..", "..");
const BUN = process.execPath;

/** `pid`'s command line, arguments joined by spaces (for a failure message), or "(gone)". */
function commandLine(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ").trim();
  } catch {
    return "(gone)";
  }
}


/**
 * The parent, bundled once per file (Bun.build of the real src/launcher and src/config modules into one
 * file): a try's process then loads one file instead of transpiling the launcher's and the config's
 * modules afresh (its HOME is new each try, so Bun's transpiler cache is cold): ~0.4 s instead of
 * ~1.3-2 s a try at load 13-20. Its argument (JSON): the policy, the shell command, the folder.
 */
let parentBundle: Promise<string> | undefined;
function bundledParent(): Promise<string> {
  parentBundle ??= (async () => {
    const dir = sharedTempDir("airlock-pdeath-parent-");
    const entry = join(dir, "parent.ts");
    writeFileSync(
      entry,
      `import { bwrapAvailable } from ${JSON.stringify(join(REPO, "src/launcher/probe.ts"))};
import { launch } from ${JSON.stringify(join(REPO, "src/launcher/spawn.ts"))};
import { parseConfigText } from ${JSON.stringify(join(REPO, "src/config/load.ts"))};
const a = JSON.parse(process.argv[2]) as { policy: "workspace-write" | "danger-full-access"; command: string; dir: string };
const config = parseConfigText(\`sandbox: \${a.policy}\\n\`, "airlock.yaml");
// The availability probe is cached: with it done, launch() reaches spawn() within this tick's microtasks.
if (!(await bwrapAvailable("/usr/bin/bwrap"))) throw new Error("bubblewrap cannot run here");
void launch({ policy: a.policy, argv: ["/bin/sh", "-c", a.command], cwd: a.dir, workspace: a.dir, timeoutMs: 60000, maxOutputBytes: 1000, config });
// After the spawn, in the same tick: the bwrap child exists, its --die-with-parent may not yet hold.
setImmediate(() => process.kill(process.pid, "SIGKILL"));
`,
    );
    const out = join(dir, "out");
    const built = await Bun.build({ entrypoints: [entry], target: "bun", outdir: out });
    if (!built.success) throw new Error(`bundling the parent failed: ${built.logs.join("\n")}`);
    return built.outputs[0]!.path;
  })();
  return parentBundle;
}

describe("launcher.launch: airlock killed right after spawning", () => {
  for (const user of testUsers()) {
    for (const policy of ["workspace-write", "danger-full-access"] as const) {
      test(`as ${user.name}, ${policy}: the tree dies, the marker is never written (10 tries)`, async () => {
        const parent = await bundledParent();
        for (let i = 0; i < 10; i++) {
          const dir = sharedTempDir("airlock-pdeath-");
          const marker = join(dir, "written");
          // A unique sleep length names the process tree in /proc (this process's pid, the try and 9 random
          // digits: no other test's or user's command line holds "sleep 0.<tag>"); the tree is long, so only a
          // survivor writes.
          const tag = `3${process.pid}0${i}${String(Math.floor(Math.random() * 1e9)).padStart(9, "0")}`;
          const mark = `sleep 0.${tag}`;
          const command = `sleep 0.${tag}; sleep 4; touch ${marker}`;
          const proc = Bun.spawn([...user.prefix, BUN, parent, JSON.stringify({ policy, command, dir })], { cwd: dir, stdout: "ignore", stderr: "pipe", env: { PATH: "/usr/bin:/bin", HOME: dir } });
          await proc.exited;
          const stderr = await new Response(proc.stderr).text();
          expect({ signal: proc.signalCode, stderr }).toEqual({ signal: "SIGKILL", stderr: "" });
          // Wait until nothing of the tree is left (an event, not a clock), then look for the marker. "Nothing left"
          // is five looks in a row that find none: a process inside execve(2) shows an empty command line for a moment
          // (one look missed a live bwrap that way in CI, and the survivor check right after found it).
          for (let w = 0, none = 0; w < 400 && none < 5; w++) {
            none = processesWith(mark).length === 0 ? none + 1 : 0;
            await Bun.sleep(50);
          }
          const survivors = processesWith(mark).map((pid) => `${pid}: ${commandLine(pid)}`);
          for (const line of survivors) process.kill(Number(line.split(":")[0]), "SIGKILL");
          expect(survivors).toEqual([]);
          expect(existsSync(marker)).toBe(false);
        }
      }, 300_000);
    }
  }
});
