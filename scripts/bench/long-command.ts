/**
 * @module scripts/bench/long-command
 * What judging one long `developer__shell` command costs the gate's thread (prints JSON): for each shape —
 * `heredoc` (`cat > notes.txt <<'EOF'` and `--lines` lines, default 4,000), `one_liner` (one `echo` of
 * `--kb` KB of words, default 100), `nested` (`echo $(echo $(… ))` `--nest` deep, default 200), `semicolons`
 * (`true; ` `--semis` times, default 20,000), `command_words` (`echo rm rm …`, `--names` words, default 500: each
 * command name among the words is judged again with the words after it) — the main thread's CPU in ms (`clock_gettime(CLOCK_THREAD_CPUTIME_ID)`,
 * so time preempted on a loaded machine is not counted), median of `--runs` (default 3), of each step the gate
 * runs on a shell command: `split` (shell/words.ts `splitCommands`), `floor` (security-floor.ts `judgeCall`),
 * `read_only` (tool/read-only-commands.ts `isKnownReadOnlyCommand`), `rules` (rules/match.ts `shellView`),
 * `named_files` (gate/named-files.ts `namedFiles`, the card's bound files), `will_fail` (security-floor.ts
 * `literalWriteTargets`), and the floor's verdict (findings count) as a check.
 * Usage: `bun scripts/bench/long-command.ts [--lines 4000] [--kb 100] [--nest 200] [--semis 20000] [--names 500] [--runs 3]`
 */
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { threadCpuNs } from "./thread-cpu.ts";
import { arg } from "./args.ts";
import { splitCommands } from "../../src/shell/words.ts";
import { judgeCall, literalWriteTargets, type FloorEnv } from "../../src/gate/inspectors/security-floor.ts";
import { isKnownReadOnlyCommand } from "../../src/tool/read-only-commands.ts";
import { shellView } from "../../src/gate/rules/match.ts";
import { namedFiles } from "../../src/gate/named-files.ts";

const LINES = arg("--lines", 4000);
const KB = arg("--kb", 100);
const NEST = arg("--nest", 200);
const SEMIS = arg("--semis", 20_000);
const NAMES = arg("--names", 500);
const RUNS = arg("--runs", 3);

const ws = mkdtempSync(path.join(os.tmpdir(), "airlock-bench-long-"));
const env: FloorEnv = { workspace: ws, policy: "workspace-write", home: ws, PATH: process.env.PATH };

const shapes: Record<string, string> = {
  heredoc: `cat > notes.txt <<'EOF'\n${Array.from({ length: LINES }, (_, i) => `- item ${i}: see section ${i % 97} of "the guide", cost $${i}.00 (${i * 7} units)`).join("\n")}\nEOF`,
  one_liner: `echo ${Array.from({ length: Math.ceil((KB * 1024) / 8) }, (_, i) => `w${i.toString(36).padStart(6, "0")}`).join(" ")}`,
  nested: `${"echo $(".repeat(NEST)}true${")".repeat(NEST)}`,
  semicolons: `${"true; ".repeat(SEMIS)}echo done`,
  command_words: `echo ${"rm ".repeat(NAMES)}`,
};

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const ms = (f: () => unknown): number => {
  const t = threadCpuNs();
  f();
  return (threadCpuNs() - t) / 1e6;
};
const shellTool = { name: "developer__shell" };

const out: Record<string, Record<string, number>> = {};
for (const [name, command] of Object.entries(shapes)) {
  const steps: Record<string, () => unknown> = {
    split: () => splitCommands(command),
    floor: () => judgeCall({ kind: "shell", command }, env),
    read_only: () => isKnownReadOnlyCommand(command),
    rules: () => shellView(command),
    named_files: () => namedFiles(shellTool, { command }, ws),
    will_fail: () => literalWriteTargets(command, env),
  };
  const row: Record<string, number> = { chars: command.length };
  for (const [step, f] of Object.entries(steps)) row[`${step}_ms`] = Math.round(median(Array.from({ length: RUNS }, () => ms(f))) * 10) / 10;
  row.findings = judgeCall({ kind: "shell", command }, env).length;
  out[name] = row;
}
rmSync(ws, { recursive: true, force: true });
console.log(JSON.stringify({ lines: LINES, kb: KB, nest: NEST, semis: SEMIS, names: NAMES, runs: RUNS, load: os.loadavg().map((l) => Math.round(l * 100) / 100), ...out }, null, 1));
