/**
 * @module test/e2e/console/scenarios
 * The console in a real browser (Debian's chromium via playwright-core, run by Node) against the compiled
 * binary. Prints one JSON line per case, `{"case", "ok", "error"?}`, then `{"done": true}`.
 * Usage: node scenarios.mjs '{"bin": "...", "tmp": "...", "shots": "<folder for screenshots>"}'
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { api, launchBrowser, setup, startServer, startTurn, stopServer, until } from "./servers.mjs";

const opts = JSON.parse(process.argv[2]);
const T = 60_000; // an upper bound for waits only: chromium on a loaded 2-core machine can be slow

const NOTES = Array.from({ length: 60 }, (_, i) => `line ${i + 1} of the new notes`).join("\n") + "\n";
const TREE = `
turns:
  - tool_calls: [{ name: subagent__spawn, arguments: { instructions: "plan the notes" } }]
  - text: "root done"
subagents:
  - turns:
      - tool_calls: [{ name: subagent__spawn, arguments: { instructions: "write the notes" } }]
      - text: "planner done"
  - turns:
      - tool_calls: [{ name: developer__write_file, arguments: ${JSON.stringify({ path: "notes.txt", content: NOTES })} }]
      - text: "researcher done"
`;
const PROOF = `
turns:
  - tool_calls: [{ name: developer__read_file, arguments: { path: ".env" } }]
  - text: "read the env file"
`;

const TOUCH = `
turns:
  - tool_calls: [{ name: developer__shell, arguments: { command: "touch console-one.txt" } }]
  - tool_calls: [{ name: subagent__spawn, arguments: { instructions: "touch another" } }]
  - text: "touched"
subagents:
  - turns:
      - tool_calls: [{ name: developer__shell, arguments: { command: "touch console-two.txt" } }]
      - text: "child touched"
`;

const WILL_FAIL = `
turns:
  - tool_calls: [{ name: developer__shell, arguments: { command: "echo x > /etc/airlock-test" } }]
  - text: "tried"
`;

function report(name, ok, error) {
  process.stdout.write(JSON.stringify({ case: name, ok, ...(error ? { error: String(error?.stack ?? error) } : {}) }) + "\n");
}

async function run(name, fn) {
  if (opts.only && !name.includes(opts.only)) return;
  try {
    await fn();
    report(name, true);
  } catch (e) {
    if (opts.debug) await page.screenshot({ path: join(opts.tmp, "failed.png") }).catch(() => {});
    report(name, false, e);
  }
}

const pending = async (srv) => (await api(srv, "GET", "/actions")).body.actions;
const cardOf = async (srv, pred) => until("a pending card", async () => (await pending(srv)).find(pred), T);
const card = (page, rid) => page.locator(`.card[data-request-id="${rid}"]`);
const messages = async (srv, id) => (await api(srv, "GET", `/sessions/${id}`)).body.messages;
const grandchildOf = async (srv, root) => {
  const all = (await api(srv, "GET", "/sessions")).body.sessions;
  const child = all.find((s) => s.parent_session_id === root);
  return child && all.find((s) => s.parent_session_id === child.id);
};

const treeDirs = setup(opts.tmp, "tree", { script: TREE, files: { "notes.txt": "old notes\nline 2 of the new notes\n" } });
const proofDirs = setup(opts.tmp, "proof", { script: PROOF, files: { ".env": "SECRET=hunter2\n" } });
const A = await startServer(opts.bin, treeDirs.dataDir, treeDirs.workspace);
let B = await startServer(opts.bin, proofDirs.dataDir, proofDirs.workspace);
const context = await launchBrowser();
const page = await context.newPage();
const pageErrors = [];
page.on("pageerror", (e) => pageErrors.push(e.message));

await page.goto(A.link);
await run("serve prints the console link; the page takes the token from the fragment and strips it", async () => {
  if (!A.link || !A.link.endsWith(`/#t=${A.token}`)) throw new Error(`serve printed ${A.link}`);
  await page.waitForSelector('.top .conn[data-state="live"]', { timeout: T });
  const href = await page.evaluate(() => location.href);
  if (href.includes(A.token)) throw new Error(`the token is still in the address bar: ${href}`);
  const stored = await page.evaluate(() => sessionStorage.getItem("airlock.token"));
  if (stored !== A.token) throw new Error("the token is not in sessionStorage");
});

await run("the grandchild's card appears at the root with its chain label, full arguments and the diff", async () => {
  const root = await startTurn(A);
  const c = await cardOf(A, (x) => x.tool === "developer__write_file");
  const el = card(page, c.request_id);
  await el.waitFor({ timeout: T });
  const chain = (await el.locator(".chain").textContent()).trim();
  if (chain !== "root › subagent#0 › subagent#1") throw new Error(`chain label: ${chain}`);
  if ((await el.locator(".tool").first().textContent()) !== "developer__write_file") throw new Error("tool name missing");
  const content = el.locator('.arg[data-key="content"]');
  await content.locator("button.more").click();
  const full = await content.locator("pre").textContent();
  if (!full.includes("line 60 of the new notes")) throw new Error("the arguments are cut");
  const diff = await el.locator(".preview .diff pre").textContent();
  if (!diff.includes("-old notes") || !diff.includes("+line 1 of the new notes") || !diff.includes(" line 2 of the new notes")) throw new Error(`diff: ${diff.slice(0, 300)}`);
  if (await el.locator(".will-fail").count()) throw new Error("a write inside the workspace is said to be refused by the sandbox");
  if ((await page.title()) !== "(1) airlock") throw new Error(`title: ${await page.title()}`);
  // Pinned on top of the root's view too.
  await page.goto(`${A.url}/#/s/${root.id}`);
  const pinned = page.locator(`.session .card[data-request-id="${c.request_id}"]`);
  await pinned.waitFor({ timeout: T });
  if (opts.shots) await pinned.screenshot({ path: join(opts.shots, "console-card.png") });
  await pinned.locator("button.allow:not([disabled])").click({ timeout: T });
  await pinned.waitFor({ state: "detached", timeout: T });
  await until("the root's turn to finish", async () => (await messages(A, root.id)).some((m) => m.role === "assistant" && m.content === "root done"), T);
  const written = readFileSync(join(treeDirs.workspace, "notes.txt"), "utf8");
  if (written !== NOTES) throw new Error("notes.txt was not written as approved");
  await page.locator(".transcript .spawn a").first().waitFor({ timeout: T });
  await page.locator(".msg.assistant .text", { hasText: "root done" }).waitFor({ timeout: T });
  if (opts.shots) await page.screenshot({ path: join(opts.shots, "console-session.png"), fullPage: true });
});

await run("Deny reaches the model as a refusal", async () => {
  await page.goto(`${A.url}/#/`);
  const root = await startTurn(A);
  const gc = await until("the grandchild", () => grandchildOf(A, root.id), T);
  const c = await cardOf(A, (x) => x.home_session_id === gc.id);
  await card(page, c.request_id).locator("button.deny:not([disabled])").click({ timeout: T });
  await card(page, c.request_id).waitFor({ state: "detached", timeout: T });
  const tool = await until("the refusal in the grandchild's conversation", async () => (await messages(A, gc.id)).find((m) => m.role === "tool"), T);
  if (!tool.is_error || JSON.parse(tool.content).error.code !== "denied") throw new Error(`tool message: ${tool.content}`);
  await page.goto(`${A.url}/#/s/${gc.id}`);
  const code = await page.locator(".transcript .refusal .code").first().textContent({ timeout: T });
  if (code !== "denied") throw new Error(`refusal shown: ${code}`);
});

await run("a reload while a card waits brings it back; a decision by curl removes it (decided elsewhere)", async () => {
  await page.goto(`${A.url}/#/`);
  const root = await startTurn(A);
  const gc = await until("the grandchild", () => grandchildOf(A, root.id), T);
  const c = await cardOf(A, (x) => x.home_session_id === gc.id);
  await card(page, c.request_id).waitFor({ timeout: T });
  await page.reload();
  await card(page, c.request_id).waitFor({ timeout: T });
  const r = await api(A, "POST", `/sessions/${root.id}/actions/${c.request_id}`, { decision: "allow_once" });
  if (r.status !== 200) throw new Error(`curl decision: ${r.status} ${JSON.stringify(r.body)}`);
  await card(page, c.request_id).waitFor({ state: "detached", timeout: T });
  await page.locator(".notices li", { hasText: "decided elsewhere" }).waitFor({ timeout: T });
});

await run("a double click across two queued cards decides only the first", async () => {
  await page.goto(B.link);
  await page.waitForSelector('.top .conn[data-state="live"]', { timeout: T });
  const r1 = await startTurn(B);
  const c1 = await cardOf(B, (x) => x.home_session_id === r1.id);
  const r2 = await startTurn(B);
  const c2 = await cardOf(B, (x) => x.home_session_id === r2.id);
  await card(page, c1.request_id).locator("button.deny:not([disabled])").waitFor({ timeout: T });
  await card(page, c2.request_id).locator("button.deny:not([disabled])").waitFor({ timeout: T });
  const order = await page.locator(".card").evaluateAll((els) => els.map((e) => e.getAttribute("data-request-id")));
  if (!(order.indexOf(c1.request_id) >= 0 && order.indexOf(c2.request_id) === order.indexOf(c1.request_id) + 1)) throw new Error(`card order: ${order}`);
  const button = card(page, c1.request_id).locator("button.deny");
  await button.scrollIntoViewIfNeeded();
  const box = await button.boundingBox();
  const x = box.x + box.width / 2;
  const y = box.y + box.height / 2;
  // The second click of a double click can land after the first card is gone: whatever is under the pointer
  // the moment it leaves is clicked again, in the same task as the move.
  await page.evaluate(
    ({ rid, x, y }) => {
      const gone = () => !document.querySelector(`.card[data-request-id="${rid}"]`);
      const obs = new MutationObserver(() => {
        if (!gone()) return;
        obs.disconnect();
        const el = document.elementFromPoint(x, y);
        window.__secondClick = { tag: el?.tagName, cls: String(el?.className ?? ""), card: el?.closest(".card")?.getAttribute("data-request-id") ?? null };
        el?.click();
      });
      obs.observe(document.body, { childList: true, subtree: true });
    },
    { rid: c1.request_id, x, y },
  );
  await page.mouse.dblclick(x, y);
  await card(page, c1.request_id).waitFor({ state: "detached", timeout: T });
  const second = await page.evaluate(() => window.__secondClick);
  if (second?.card !== c2.request_id || second?.cls !== "deny") throw new Error(`the second card's Deny did not slide under the pointer: ${JSON.stringify(second)}`);
  await page.locator(".notices li", { hasText: "denied" }).first().waitFor({ timeout: T });
  // The page never started a decision for the second card (decide() marks a card synchronously before posting).
  const started = await page.evaluate((rid) => window.airlockConsole.feed.mine.has(rid) || !!window.airlockConsole.feed.ui.get(rid)?.busy, c2.request_id);
  if (started) throw new Error("the second click started a decision on the second card");
  const still = (await pending(B)).map((x) => x.request_id);
  if (still.includes(c1.request_id) || !still.includes(c2.request_id)) throw new Error(`pending after the double click: ${JSON.stringify(still)}`);
  if (!(await card(page, c2.request_id).isVisible())) throw new Error("the second card is no longer shown");
  await api(B, "POST", `/sessions/${r2.id}/actions/${c2.request_id}`, { decision: "deny" });
  await card(page, c2.request_id).waitFor({ state: "detached", timeout: T });
});

await run("Allow without the approver token is refused and explained; typed, then Allow once: the call runs once and the card goes", async () => {
  await page.goto(B.link);
  await page.waitForSelector('.top .conn[data-state="live"]', { timeout: T });
  await page.evaluate(() => sessionStorage.removeItem("airlock.approver"));
  const s = await startTurn(B);
  const c = await cardOf(B, (x) => x.home_session_id === s.id);
  if (!c.requires_user_proof) throw new Error("the .env read should need user proof");
  const el = card(page, c.request_id);
  await el.locator(".lock").waitFor({ timeout: T });
  await el.locator("button.allow:not([disabled])").click({ timeout: T });
  const err = await el.locator(".error").textContent({ timeout: T });
  if (!err.includes("user_proof_required") || !err.includes("403")) throw new Error(`shown: ${err}`);
  if (!(await pending(B)).some((x) => x.request_id === c.request_id)) throw new Error("the card was decided without the token");
  // A wrong token is refused too, with its own code.
  await el.locator('input[name="approver"]').fill("not-the-token");
  await el.locator("button.keep").click();
  await el.locator("button.allow:not([disabled])").click({ timeout: T });
  await el.locator(".error", { hasText: "user_proof_invalid" }).waitFor({ timeout: T });
  if (!(await pending(B)).some((x) => x.request_id === c.request_id)) throw new Error("the card was decided with a wrong token");
  // Typed and Allow once pressed directly (no "Keep for this tab" first): the typed token is sent.
  await el.locator('input[name="approver"]').fill(B.approver);
  await el.locator("button.allow:not([disabled])").click({ timeout: T });
  await el.waitFor({ state: "detached", timeout: T });
  const msgs = await until("the turn to finish", async () => {
    const m = await messages(B, s.id);
    return m.some((x) => x.role === "assistant" && x.content === "read the env file") && m;
  }, T);
  const tools = msgs.filter((m) => m.role === "tool");
  if (tools.length !== 1 || !tools[0].content.includes("hunter2") || tools[0].is_error) throw new Error(`tool results: ${JSON.stringify(tools)}`);
  const kept = await page.evaluate(() => sessionStorage.getItem("airlock.approver"));
  if (kept !== B.approver) throw new Error("the approver token is not kept for the tab");
});

await run("a session started from the page shows its card and messages; a message sent from the page runs a turn", async () => {
  await page.goto(`${B.url}/#/`);
  await page.locator('textarea[name="first-message"]').fill("please read the env file");
  await page.locator(".new-session button[type=submit]").click();
  await page.waitForURL(/#\/s\/ses_/, { timeout: T });
  const sid = new URL(page.url()).hash.slice(4);
  await page.locator(".msg.user .text", { hasText: "please read the env file" }).waitFor({ timeout: T });
  // Titled by its first message, so the list does not read "root" for every session started here.
  const made = (await api(B, "GET", "/sessions")).body.sessions.find((x) => x.id === sid);
  if (made?.title !== "please read the env file") throw new Error(`title: ${JSON.stringify(made?.title)}`);
  const pinned = page.locator(".session .card");
  await pinned.waitFor({ timeout: T });
  if ((await pinned.locator(".tool").first().textContent()) !== "developer__read_file") throw new Error("wrong card");
  await pinned.locator("button.deny:not([disabled])").click({ timeout: T });
  await page.locator(".transcript .refusal .code", { hasText: "denied" }).waitFor({ timeout: T });
  await page.locator(".msg.assistant .text", { hasText: "read the env file" }).waitFor({ timeout: T });
  await page.locator('.composer textarea[name="message"]').fill("one more time");
  await page.locator(".composer button.send:not([disabled])").click({ timeout: T });
  await page.locator(".msg.user .text", { hasText: "one more time" }).waitFor({ timeout: T });
  await page.locator(".msg.assistant .text", { hasText: "(script ended)" }).waitFor({ timeout: T });
  const msgs = await messages(B, sid);
  if (msgs.filter((m) => m.role === "user").length !== 2) throw new Error(`messages: ${JSON.stringify(msgs)}`);
});

await run("Cancel turn from the page ends the turn and withdraws its card", async () => {
  const s = await startTurn(B);
  const c = await cardOf(B, (x) => x.home_session_id === s.id);
  await page.goto(`${B.url}/#/s/${s.id}`);
  await card(page, c.request_id).waitFor({ timeout: T });
  await page.locator(".composer button.cancel").click({ timeout: T });
  await card(page, c.request_id).waitFor({ state: "detached", timeout: T });
  await page.locator(".session-head .state.idle").waitFor({ timeout: T });
  const turns = (await api(B, "GET", `/sessions/${s.id}`)).body.turns;
  if (turns[turns.length - 1]?.status !== "cancelled") throw new Error(`turns: ${JSON.stringify(turns)}`);
});

await run("schedules: the list, Run now, and the run's result object", async () => {
  writeFileSync(join(proofDirs.dataDir, "nightly.yaml"), "name: nightly\ninstructions: go\nprovider: { name: scripted, script: nightly.turns.yaml }\nmode: autonomous\n");
  writeFileSync(join(proofDirs.dataDir, "nightly.turns.yaml"), "turns:\n  - text: nightly done\n");
  const sch = await api(B, "POST", "/schedules", { cron: "0 3 1 1 *", recipe_path: join(proofDirs.dataDir, "nightly.yaml") });
  if (sch.status !== 201) throw new Error(`POST /schedules: ${sch.status} ${JSON.stringify(sch.body)}`);
  await page.goto(`${B.url}/#/schedules`);
  const li = page.locator(`li[data-schedule-id="${sch.body.id}"]`);
  await li.waitFor({ timeout: T });
  await li.locator("button", { hasText: "Run now" }).click();
  await li.locator(".runs .state.completed").waitFor({ timeout: T });
  const text = await li.locator(".runs .result pre").first().textContent();
  if (!text.includes('"result": "nightly done"') || !text.includes('"status": "completed"')) throw new Error(`run shown: ${text}`);
});

await run("the server restarts: the page reconnects and resyncs from the snapshot", async () => {
  await page.goto(`${B.url}/#/`);
  const s = await startTurn(B);
  const c = await cardOf(B, (x) => x.home_session_id === s.id);
  await card(page, c.request_id).waitFor({ timeout: T });
  const port = B.port;
  await stopServer(B);
  await page.waitForSelector('.top .conn:not([data-state="live"])', { timeout: T });
  B = await startServer(opts.bin, proofDirs.dataDir, proofDirs.workspace, port);
  await page.waitForSelector('.top .conn[data-state="live"]', { timeout: T });
  // The old process's card died with it: the fresh snapshot drops it; the session is still listed.
  await card(page, c.request_id).waitFor({ state: "detached", timeout: T });
  await page.locator(`.node[data-session-id="${s.id}"]`).waitFor({ timeout: T });
  const s2 = await startTurn(B);
  const c2 = await cardOf(B, (x) => x.home_session_id === s2.id);
  await card(page, c2.request_id).waitFor({ timeout: T });
  await api(B, "POST", `/sessions/${s2.id}/actions/${c2.request_id}`, { decision: "deny" });
});

await run("a card in a hidden tab raises a desktop notification; permission is asked only from a click", async () => {
  // A page whose Notification records what it is asked, and whose visibility the test sets.
  const np = await context.newPage();
  np.on("pageerror", (e) => pageErrors.push(e.message));
  await np.addInitScript(() => {
    window.__notes = [];
    window.__asked = 0;
    let perm = "default";
    class RecordingNotification {
      constructor(title, o) {
        window.__notes.push({ title, ...o });
      }
      static get permission() {
        return perm;
      }
      static requestPermission() {
        window.__asked++;
        perm = "granted";
        return Promise.resolve(perm);
      }
    }
    Object.defineProperty(window, "Notification", { value: RecordingNotification, configurable: true, writable: true });
    Object.defineProperty(document, "hidden", { get: () => window.__hidden === true, configurable: true });
  });
  await np.goto(B.link);
  await np.waitForSelector('.top .conn[data-state="live"]', { timeout: T });
  if ((await np.evaluate(() => window.__asked)) !== 0) throw new Error("permission was asked without a click");
  await np.locator("button.notify").click({ timeout: T });
  if ((await np.evaluate(() => window.__asked)) !== 1) throw new Error("the click did not ask for permission");
  // Visible tab: the card is drawn, no desktop notification.
  const s1 = await startTurn(B);
  const c1 = await cardOf(B, (x) => x.home_session_id === s1.id);
  await card(np, c1.request_id).waitFor({ timeout: T });
  if ((await np.evaluate(() => window.__notes.length)) !== 0) throw new Error("a visible tab raised a desktop notification");
  await api(B, "POST", `/sessions/${s1.id}/actions/${c1.request_id}`, { decision: "deny" });
  // Hidden tab: one notification naming the chain and the tool, tagged with the card.
  await np.evaluate(() => {
    window.__hidden = true;
    document.dispatchEvent(new Event("visibilitychange"));
  });
  const s2 = await startTurn(B);
  const c2 = await cardOf(B, (x) => x.home_session_id === s2.id);
  const note = await until("a desktop notification", async () => (await np.evaluate(() => window.__notes)).find((n) => n.tag === c2.request_id), T);
  if (!note.body.includes(c2.tool) || !note.title.includes("airlock")) throw new Error(`notification: ${JSON.stringify(note)}`);
  if ((await np.title()) !== "(1) airlock") throw new Error(`title: ${await np.title()}`);
  await api(B, "POST", `/sessions/${s2.id}/actions/${c2.request_id}`, { decision: "deny" });
  await np.close();
});

await run("Allow for this session shows the rule, and the next matching call (in a child) runs without a card", async () => {
  const dirs = setup(opts.tmp, "session-rules", { script: TOUCH });
  const C = await startServer(opts.bin, dirs.dataDir, dirs.workspace);
  try {
    await page.goto(C.link);
    await page.waitForSelector('.top .conn[data-state="live"]', { timeout: T });
    const s = await startTurn(C);
    const c = await cardOf(C, (x) => x.home_session_id === s.id);
    if (c.suggested_rule !== "Bash(touch:*)") throw new Error(`suggested_rule: ${c.suggested_rule}`);
    const el = card(page, c.request_id);
    // shown before it is taken
    const shown = await el.locator(".suggested code").textContent({ timeout: T });
    if (shown !== "Bash(touch:*)") throw new Error(`rule shown: ${shown}`);
    await el.locator("button.allow-session:not([disabled])").click({ timeout: T });
    await el.waitFor({ state: "detached", timeout: T });
    await page.locator(".notices li", { hasText: "allowed for this session" }).waitFor({ timeout: T });
    await until("the turn to finish", async () => (await messages(C, s.id)).some((m) => m.role === "assistant" && m.content === "touched"), T);
    if (!existsSync(join(dirs.workspace, "console-two.txt"))) throw new Error("the child's matching call did not run");
    const rules = (await api(C, "GET", `/sessions/${s.id}/rules`)).body.rules;
    if (rules.length !== 1 || rules[0].rule !== "Bash(touch:*)") throw new Error(`rules: ${JSON.stringify(rules)}`);
    // the child's call raised no card: only the first card was ever parked
    const parked = (await api(C, "GET", `/audit?decision=allow_session`)).body.audit.filter((r) => r.kind === "card_decision");
    if (parked.length !== 1 || parked[0].request_id !== c.request_id) throw new Error(`answers: ${JSON.stringify(parked)}`);
    const child = (await api(C, "GET", "/sessions")).body.sessions.find((x) => x.parent_session_id === s.id);
    const calls = (await api(C, "GET", `/audit?session=${child.id}`)).body.audit.filter((r) => r.kind === "call_judged");
    if (calls.length !== 1 || calls[0].decision !== "allow" || calls[0].detail.cards) throw new Error(`child's calls: ${JSON.stringify(calls)}`);
  } finally {
    await stopServer(C);
  }
});

await run("a card whose write the sandbox will still refuse says so before anyone answers", async () => {
  const dirs = setup(opts.tmp, "will-fail", { script: WILL_FAIL });
  const C = await startServer(opts.bin, dirs.dataDir, dirs.workspace);
  try {
    await page.goto(C.link);
    await page.waitForSelector('.top .conn[data-state="live"]', { timeout: T });
    const s = await startTurn(C);
    const c = await cardOf(C, (x) => x.home_session_id === s.id);
    if (!c.will_fail?.includes("workspace-write will still refuse writing /etc/airlock-test")) throw new Error(`will_fail: ${c.will_fail}`);
    const shown = await card(page, c.request_id).locator(".will-fail").textContent({ timeout: T });
    if (shown !== c.will_fail) throw new Error(`shown: ${shown}`);
    // answered without naming a session: at the card's root surface
    const r = await api(C, "POST", `/actions/${c.request_id}`, { decision: "deny" });
    if (r.status !== 200 || r.body.decided_in !== s.id) throw new Error(`deny: ${r.status} ${JSON.stringify(r.body)}`);
    await card(page, c.request_id).waitFor({ state: "detached", timeout: T });
  } finally {
    await stopServer(C);
  }
});

await run("no script errors in the page", async () => {
  if (pageErrors.length) throw new Error(pageErrors.join("\n"));
});

await context.close();
await stopServer(A);
await stopServer(B);
process.stdout.write(JSON.stringify({ done: true }) + "\n");
