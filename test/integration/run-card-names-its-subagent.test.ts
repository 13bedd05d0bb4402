/**
 * `airlock run`'s terminal card names the agent that asks as its stderr call lines do (the chain label,
 * cli/chain-prefix.ts: `[root›subagent#0]`), in its header and right above its question — it said
 * `(from subagent ses_…)`. And on an 80×24 terminal a one-line 2,000-character argument scrolls the card's
 * header (and its reason) out of sight: the lines right above the question restate the call and why it asks,
 * the reason cut to one terminal line. A real PTY (`script`, its size set with `stty`).
 */
import { expect, test } from "bun:test";
import { airlockRun, QUESTION, runAnswering, scriptedDataDir, tempDirs } from "../run-in-pty.ts";

const tempDir = tempDirs();

test.each([80, 100])("a subagent's card says [root›subagent#0], and its reason is in sight of the question on a %p×24 terminal", async (cols) => {
  const dir = tempDir("airlock-card-label-");
  const command = `echo ${"z".repeat(2000)} > /etc/airlock-card-label-test.txt`; // outside the workspace: a long reason (answered n)
  const ws = scriptedDataDir(
    dir,
    {
      turns: [{ tool_calls: [{ name: "subagent__spawn", arguments: { instructions: "write it" } }] }, { text: "done" }],
      subagents: [{ turns: [{ tool_calls: [{ name: "developer__shell", arguments: { command } }] }, { text: "child done" }] }],
    },
    { mode: "smart", sandbox: "workspace-write" },
  );
  const cmd = `stty cols ${cols} rows 24; ${airlockRun(dir, "go", ws)}`;
  const run = await runAnswering({ cmd, cwd: ws, env: { NO_COLOR: "1" } }, () => "n\n");
  const { answered } = run;
  const screen = run.screen.replace(/\x1b\[[0-9;?]*[A-Za-z]/g, "").replace(/\r/g, "");
  expect(answered).toBe(1);
  // the stderr call line and the card name the subagent the same way
  expect(screen).toContain("airlock: → [root›subagent#0] developer__shell echo zzz");
  expect(screen).toContain("\nairlock: [root›subagent#0] developer__shell needs your approval — ");
  expect(screen).not.toContain("from subagent");
  const at = screen.indexOf(QUESTION);
  const above = screen.slice(0, at).split("\n").slice(-3, -1);
  expect(above[0]!.startsWith("  [root›subagent#0] developer__shell echo zzz")).toBe(true);
  // why it asks, cut to one line of the terminal's columns, right above the question
  expect(above[1]).toMatch(/^ {2}sensitive_ops: redirects output to protected path \/etc\/airlock-card-label-t/);
  expect(above[1]!.length).toBe(cols);
  expect(above[1]!.endsWith("…")).toBe(true);
  const header = screen.slice(screen.indexOf("needs your approval — ") + "needs your approval — ".length).split("\n")[0]!;
  expect(header.startsWith(above[1]!.trim().replace(/…$/, ""))).toBe(true);
  // the scenario: the card's header is more than a screen (24 rows) above the question, so only the
  // restated lines keep the reason in sight
  const rows = screen.slice(screen.indexOf("needs your approval"), at).split("\n").reduce((n, l) => n + Math.max(1, Math.ceil(l.length / cols)), 0);
  expect(rows).toBeGreaterThan(24);
});
