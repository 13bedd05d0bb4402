/**
 * The terminal card of an attended `airlock run` shows the rule `a` would store ("a: allow for this session
 * adds the rule …"). The rule is made from the call (gate/rules/suggest.ts): a shell command's first words, a
 * file tool's absolute path — model-chosen and of any length. A 100 KB program word made a 100 KB rule, so
 * the card was 100 KB long: the tool and the reason it asks scrolled out of sight of the question, past the
 * bounded arguments. A rule that long is not offered (no `a` on that card; `y` and `n` still answer it).
 * A real PTY (`script`), the scripted provider.
 */
import { expect, test } from "bun:test";
import { airlockRun, QUESTION, runAnswering, scriptedDataDir, tempDirs } from "../run-in-pty.ts";

const tempDir = tempDirs();

test("a 100 KB command word cannot make the card's rule line push the card out of sight of its question", async () => {
  const dir = tempDir("airlock-card-rule-");
  const args = { command: `./${"a".repeat(100_000)} build` };
  const ws = scriptedDataDir(dir, { turns: [{ tool_calls: [{ name: "developer__shell", arguments: args }] }, { text: "done" }] }, { mode: "approve", sandbox: "read-only" });
  const { screen } = await runAnswering({ cmd: airlockRun(dir, "go", ws), cwd: ws, env: { NO_COLOR: "1" } }, () => "n\n");
  const card = screen.indexOf("needs your approval");
  const first = screen.indexOf(QUESTION, card);
  expect(card).toBeGreaterThan(-1);
  expect(first).toBeGreaterThan(card);
  expect(first - card).toBeLessThan(4000);
});
