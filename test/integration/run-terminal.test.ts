/**
 * `airlock run` without --headless: who can answer an ask. With a terminal (a real PTY made by
 * util-linux `script`), the person at it answers; without one, the run is headless and refuses at
 * once. And stdin is read only for PROMPT "-", so a pipe that never closes never blocks a run.
 */
import { describe, expect, test } from "bun:test";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { airlockRun, MAIN, QUESTION, runInPty as runInPtyOf, scriptedDataDir, tempDirs } from "../run-in-pty.ts";
import { turnStatuses } from "../turn-statuses.ts";

const tempDir = tempDirs();

function setup(command = "echo hi > out.txt"): { dir: string; ws: string } {
  const dir = tempDir("airlock-term-");
  const ws = scriptedDataDir(
    dir,
    `turns:\n  - tool_calls:\n      - name: developer__shell\n        arguments: { command: ${JSON.stringify(command)} }\n  - text: "done"\n`,
    "provider: { name: scripted, script: turns.yaml }\nmode: smart\n",
  );
  return { dir, ws };
}

/** Runs `airlock run` inside a PTY (util-linux `script`), typing `answer` once the question is on screen. Killed after 40 s. */
async function runInPty(dir: string, ws: string, answer: string): Promise<{ code: number; screen: string }> {
  let typed = false;
  return await runInPtyOf({
    cmd: airlockRun(dir, "write it"),
    cwd: ws,
    onScreen: async (screen, type) => {
      if (!typed && screen.includes(QUESTION)) {
        typed = true;
        await type(`${answer}\n`);
      }
    },
  });
}

describe("airlock run: the person at the terminal answers", () => {
  test("y allows the call once; the question names the tool and the reason", async () => {
    const { dir, ws } = setup();
    const { code, screen } = await runInPty(dir, ws, "y");
    expect(screen).toContain("developer__shell needs your approval");
    expect(screen).toContain("allowed once");
    expect(code).toBe(0);
    expect(existsSync(join(ws, "out.txt"))).toBe(true);
  });

  test("anything else denies it; the tool does not run", async () => {
    const { dir, ws } = setup();
    const { code, screen } = await runInPty(dir, ws, "n");
    expect(screen).toContain("denied");
    expect(code).toBe(0); // the model got an error result and answered anyway
    expect(existsSync(join(ws, "out.txt"))).toBe(false);
  });

  test("the card's arguments cannot drive the terminal: C1 controls and bidi characters are shown escaped", async () => {
    // JSON escapes C0 controls itself; CSI as one C1 character (\u009b) and a right-to-left override it leaves raw
    const { dir, ws } = setup("echo hi \u009b2J\u202e > out.txt");
    const { code, screen } = await runInPty(dir, ws, "n");
    expect(code).toBe(0);
    expect(screen).not.toMatch(/[\u0080-\u009f\u202e]/);
    expect(screen).toContain('arguments: {"command":"echo hi \\u009b2J\\u202e > out.txt"}');
    expect(screen).toContain("→ developer__shell echo hi \\u009b2J\\u202e > out.txt");
  });
});

describe("airlock run without a terminal", () => {
  test("without --headless and no TTY, an ask is refused at once (no wait for a TTL)", async () => {
    const { dir, ws } = setup();
    const p = Bun.spawn([process.execPath, MAIN, "run", "--data-dir", dir, "--output-format", "json", "write it"], {
      cwd: ws,
      stdin: "pipe", // a pipe that is never closed: it must not block the run
      stdout: "pipe",
      stderr: "pipe",
      env: { ...process.env, AIRLOCK_HOME: "" },
    });
    const [code, out, err] = await Promise.all([p.exited, new Response(p.stdout).text(), new Response(p.stderr).text()]);
    expect(code).toBe(0);
    const result = JSON.parse(out);
    expect(result.refused_calls).toEqual([expect.objectContaining({ tool: "developer__shell", code: "no_human_surface" })]);
    expect(err).toContain("no terminal to ask on");
    expect(existsSync(join(ws, "out.txt"))).toBe(false);
  });

  test("PROMPT '-' reads the prompt from stdin", async () => {
    const { dir, ws } = setup();
    const p = Bun.spawn([process.execPath, MAIN, "run", "--data-dir", dir, "--output-format", "json", "-"], {
      cwd: ws,
      stdin: new TextEncoder().encode("from stdin\n"),
      stdout: "pipe",
      stderr: "pipe",
      env: { ...process.env, AIRLOCK_HOME: "" },
    });
    const [code, out] = await Promise.all([p.exited, new Response(p.stdout).text()]);
    expect(code).toBe(0);
    const { Store } = await import("../../src/store/store.ts");
    const store = await Store.open(join(dir, "airlock.db"));
    const first = (await store.listMessages(JSON.parse(out).session_id))[0];
    store.close();
    expect(first).toMatchObject({ role: "user", content: "from stdin" });
  });
});

/** Three shell calls, one per turn (a.txt, b.txt, c.txt), then the answer `last`. */
function setupThree(last = "done"): { dir: string; ws: string } {
  const { dir, ws } = setup();
  writeFileSync(
    join(dir, "turns.yaml"),
    "turns:\n" +
      ["a", "b", "c"].map((f) => `  - tool_calls:\n      - name: developer__shell\n        arguments: { command: "echo hi > ${f}.txt" }\n`).join("") +
      `  - text: "${last}"\n`,
  );
  return { dir, ws };
}

/**
 * Runs `airlock run` in a PTY; at the n-th question on screen, types `inputs[n]` (nothing once they run out;
 * {@link EOF} closes the PTY's input).
 * Killed after 30 s (a run that hangs on a prompt nobody can answer fails here, not at the test's timeout).
 */
const EOF = "<close stdin>";
async function runInPtyTyping(dir: string, ws: string, inputs: string[]): Promise<{ code: number; screen: string; killed: boolean }> {
  let asked = 0;
  let n = 0; // questions on screen so far (counted from where the last count stopped: a long screen is not searched again)
  let from = 0;
  return await runInPtyOf({
    cmd: airlockRun(dir, "write them"),
    cwd: ws,
    killAfterMs: 30_000,
    onScreen: async (screen, type, end) => {
      for (let at = screen.indexOf(QUESTION, from); at !== -1; at = screen.indexOf(QUESTION, from)) {
        n++;
        from = at + 1;
      }
      from = Math.max(from, screen.length - 20);
      while (asked < n) {
        const input = inputs[asked++];
        if (input === EOF) await end(); // `script` passes the end of its stdin on to the PTY
        else if (input !== undefined) await type(input);
      }
    },
  });
}

describe("airlock run: the terminal's input ends (Ctrl-D, a closed stdin)", () => {
  for (const [name, inputs] of [
    // Ctrl-D at the second question: that card is denied, the third call is refused at once, nobody is asked again
    ["Ctrl-D at the prompt", ["y\n", "\x04"]],
    // Ctrl-D right after the first answer, before the second card: the next question finds the readline closed
    ["Ctrl-D between two cards", ["y\n\x04"]],
    // the input of the PTY closed after the first answer (a piped answer that ran out)
    ["stdin closed after the first answer", ["y\n", EOF]],
  ] as const) {
    test(`${name}: the card waiting is denied, later asks are refused no_human_surface, one clear line, no stack trace, the turn ends`, async () => {
      const { dir, ws } = setupThree();
      const { code, screen, killed } = await runInPtyTyping(dir, ws, [...inputs]);
      expect(screen).not.toContain("ERR_USE_AFTER_CLOSE");
      expect(screen).not.toMatch(/\n\s+at .+:\d+:\d+/); // no stack frame
      expect(killed).toBe(false);
      expect(screen.split("stdin closed: nobody can answer on this terminal").length - 1).toBe(1);
      expect(screen).toContain("allowed once");
      expect(screen.split("denied (stdin closed)").length - 1).toBe(1);
      expect(screen.split("allow? [y]once").length - 1).toBeLessThanOrEqual(2); // the third call asked nobody
      expect(screen).toMatch(/✗ developer__shell echo hi > c\.txt — no_human_surface: no person can answer any more/);
      // the card denied for the end of the input was answered by nobody: it does not say a person denied it
      expect(screen).toMatch(/✗ developer__shell echo hi > b\.txt — denied: nobody could answer the approval request for this call \(stdin_closed: the terminal's input ended\)/);
      expect(screen).not.toContain("a person denied");
      expect(code).toBe(0); // the model got error results and answered anyway
      expect(existsSync(join(ws, "a.txt"))).toBe(true);
      expect(existsSync(join(ws, "b.txt"))).toBe(false);
      expect(existsSync(join(ws, "c.txt"))).toBe(false);
      expect(await turnStatuses(dir)).toEqual(["completed"]);
    });
  }

  test("Ctrl-C at the prompt is not the end of stdin: it cancels the turn (exit 130)", async () => {
    const { dir, ws } = setupThree();
    const { code, screen, killed } = await runInPtyTyping(dir, ws, ["\x03"]);
    expect(killed).toBe(false);
    expect(screen).not.toContain("stdin closed");
    expect(screen).toContain("SIGINT: cancelling the turn");
    // the prompt's line is ended first: nothing said next (the held ✗ line, the cancellation) lands on it
    expect(screen).not.toMatch(/\[v\]iew › (?:\x1b\[[0-9;]*[A-Za-z])*[^\r\n\x1b]/);
    // the last line names the status once: the error's code is the same word
    expect(screen).toContain("airlock: cancelled: the run was cancelled");
    expect(screen).not.toContain("cancelled: cancelled");
    // the call that waited at the prompt was not run: listed with its code, under a header that does not say
    // somebody refused it (nobody did: the run was cancelled)
    expect(screen).not.toContain("airlock: refused_calls:");
    expect(screen).toMatch(/airlock: refused_calls \(calls that were not run, and why\):\r?\nairlock: {3}developer__shell echo hi > a\.txt — cancelled\r?\n/);
    expect(code).toBe(130);
    expect(existsSync(join(ws, "a.txt"))).toBe(false);
    expect(await turnStatuses(dir)).toEqual(["cancelled"]);
  });

  test("a run that ends without an answer after the refusal is blocked: exit 3, as headless", async () => {
    const { dir, ws } = setupThree("");
    const { code, screen, killed } = await runInPtyTyping(dir, ws, ["y\n", "\x04"]);
    expect(killed).toBe(false);
    expect(screen).toContain("blocked: no_human_surface");
    expect(code).toBe(3);
    expect(await turnStatuses(dir)).toEqual(["completed"]);
  });
});

/** `airlock run`'s data dir with `turns` (YAML list items, each a model turn) as the scripted model. */
function setupTurns(turns: string): { dir: string; ws: string } {
  const { dir, ws } = setup();
  writeFileSync(join(dir, "turns.yaml"), `turns:\n${turns}`);
  return { dir, ws };
}

/** What the model got back for its calls: every stored tool message's content, in order. */
async function toolResults(dir: string): Promise<string[]> {
  const { Store } = await import("../../src/store/store.ts");
  const store = await Store.open(join(dir, "airlock.db"));
  try {
    const out: string[] = [];
    for (const s of await store.listSessions()) for (const m of await store.listMessages(s.id)) if (m.role === "tool") out.push(JSON.stringify(m.content));
    return out;
  } finally {
    store.close();
  }
}

describe("airlock run: the card and its answers", () => {
  test("a 160 KB write_file: the card shows a bounded part of the arguments and restates the call above the question; v shows all of it and asks again; n REASON tells the model why", async () => {
    const content = Array.from({ length: 4000 }, (_, i) => `row ${i} ${"z".repeat(30)}`).join("\n"); // 160 KB
    const { dir, ws } = setupTurns(
      `  - tool_calls:\n      - name: developer__write_file\n        arguments: ${JSON.stringify({ path: "big.txt", content })}\n  - text: "done"\n`,
    );
    const { code, screen, killed } = await runInPtyTyping(dir, ws, ["v\n", "n keep it small\n"]);
    expect(killed).toBe(false);
    const card = screen.indexOf("needs your approval");
    const first = screen.indexOf(QUESTION, card);
    expect(card).toBeGreaterThan(-1);
    expect(first).toBeGreaterThan(card);
    // the card up to its question fits a screen: the tool and reason are still in sight when it is asked
    expect(first - card).toBeLessThan(4000);
    expect(screen.slice(card, first)).toMatch(/… [\d,]+ more bytes \(v shows them all\)/);
    expect(screen.slice(card, first)).not.toContain("row 3999");
    // the lines right above the question name the tool and what the call is about, and why it asks
    expect(screen.slice(0, first).replace(/\x1b\[[0-9;]*[A-Za-z]/g, "")).toMatch(/\n {2}developer__write_file big\.txt\r?\n {2}mode: smart mode asks before calls that change state \(developer__write_file\)\r?\n {2}$/);
    // v: all of it, then the question again
    const second = screen.indexOf(QUESTION, first + 1);
    expect(second).toBeGreaterThan(first);
    expect(screen.slice(first, second)).toContain("row 3999");
    expect(screen.slice(second)).toContain("denied (the model is told: keep it small)");
    expect(code).toBe(0);
    expect(existsSync(join(ws, "big.txt"))).toBe(false);
    expect((await toolResults(dir)).join()).toContain("a person denied this call: keep it small");
  });

  test("a allows for the session when the card offers a rule: the next matching call runs without asking", async () => {
    const { dir, ws } = setupTurns(
      ["a", "b"].map((f) => `  - tool_calls:\n      - name: developer__shell\n        arguments: { command: "touch ${f}.txt" }\n`).join("") + '  - text: "done"\n',
    );
    const { code, screen, killed } = await runInPtyTyping(dir, ws, ["a\n"]);
    expect(killed).toBe(false);
    expect(screen).toContain("[a]session");
    expect(screen).toMatch(/a: allow for this session adds the rule \S+/);
    expect(screen).toMatch(/allowed for this session \(rule [^)]+\)/);
    expect(screen.split(QUESTION).length - 1).toBe(1);
    expect(code).toBe(0);
    expect(existsSync(join(ws, "a.txt"))).toBe(true);
    expect(existsSync(join(ws, "b.txt"))).toBe(true);
  });

  test("an answer it does not know, or a on a card that offers no rule, asks again, and is never an allow", async () => {
    const { dir, ws } = setup(); // a redirection: no rule is offered for it
    const { code, screen, killed } = await runInPtyTyping(dir, ws, ["ok\n", "yes please\n", "a\n", "\n"]);
    expect(killed).toBe(false);
    expect(screen).not.toContain("[a]session");
    expect(screen.split(QUESTION).length - 1).toBe(4);
    expect(screen).toContain("answer y (allow once), n (deny)");
    expect(screen).toContain("this card offers no rule for the session");
    expect(screen).not.toContain("allowed once");
    expect(screen).toContain("  denied");
    expect(code).toBe(0);
    expect(existsSync(join(ws, "out.txt"))).toBe(false);
  });
});
