/**
 * The watcher's console in a real browser (issue 15): Debian's chromium driven by playwright-core from a
 * Node script (test/e2e/console/scenarios.mjs) against the compiled binary's `serve`. The script runs every
 * case once, in order, and reports each; with `AIRLOCK_UPDATE_SCREENSHOTS=1` it also retakes the screenshots in
 * docs/console.md (otherwise a test run leaves the docs untouched).
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { compiledBinary, REPO } from "../harness-binary.ts";

const CASES = [
  "serve prints the console link; the page takes the token from the fragment and strips it",
  "the grandchild's card appears at the root with its chain label, full arguments and the diff",
  "Deny reaches the model as a refusal",
  "a reload while a card waits brings it back; a decision by curl removes it (decided elsewhere)",
  "a double click across two queued cards decides only the first",
  "Allow without the approver token is refused and explained; typed, then Allow once: the call runs once and the card goes",
  "a session started from the page shows its card and messages; a message sent from the page runs a turn",
  "Cancel turn from the page ends the turn and withdraws its card",
  "schedules: the list, Run now, and the run's result object",
  "the server restarts: the page reconnects and resyncs from the snapshot",
  "a card in a hidden tab raises a desktop notification; permission is asked only from a click",
  "Allow for this session shows the rule, and the next matching call (in a child) runs without a card",
  "a card whose write the sandbox will still refuse says so before anyone answers",
  "no script errors in the page",
];

const results = new Map<string, { ok: boolean; error?: string }>();
let transcript = "";

beforeAll(async () => {
  const bin = await compiledBinary();
  const tmp = mkdtempSync(join(tmpdir(), "airlock-console-"));
  const proc = Bun.spawn(["node", join(import.meta.dir, "console", "scenarios.mjs"), JSON.stringify({ bin, tmp, ...(process.env.AIRLOCK_UPDATE_SCREENSHOTS === "1" ? { shots: join(REPO, "docs") } : {}) })], {
    cwd: REPO,
    stdout: "pipe",
    stderr: "pipe",
  });
  const timer = setTimeout(() => proc.kill("SIGKILL"), 560_000);
  const [out, err] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  clearTimeout(timer);
  transcript = `${out}\n${err}`;
  for (const line of out.split("\n")) {
    if (!line.startsWith("{")) continue;
    const r = JSON.parse(line);
    if (r.case) results.set(r.case, { ok: r.ok, ...(r.error ? { error: r.error } : {}) });
  }
}, 600_000);

describe("console in chromium", () => {
  for (const name of CASES) {
    test(name, () => {
      const r = results.get(name);
      if (!r) throw new Error(`the case did not run:\n${transcript}`);
      expect(r).toEqual({ ok: true });
    });
  }
});
