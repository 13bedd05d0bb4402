/**
 * A card whose write the sandbox policy will still refuse, or whose fetch it gives no network, says so before
 * anyone answers it (`will_fail`), and the claim holds: allowed anyway (with the approver token), the write is
 * refused — by the file tool's workspace check, and by bubblewrap's read-only mounts for the shell even when
 * airlock runs as root — and the fetch cannot resolve its host.
 * A write inside the workspace carries no such warning. Real server, real bubblewrap, the CLI as a subprocess.
 */
import { afterEach, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { harnessSse, type Harness } from "../harness.ts";
import { startGateHarness } from "../integration/gate-helpers.ts";

const MAIN = resolve(import.meta.dir, "../../src/main.ts");
const TARGET = "/etc/airlock-test";
let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

async function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const p = Bun.spawn([process.execPath, MAIN, ...args, "--data-dir", h!.dataDir, "--url", h!.url], { stdout: "pipe", stderr: "pipe", env: { ...process.env, AIRLOCK_HOME: h!.dataDir } });
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { code, stdout, stderr };
}

test("under workspace-write in approve mode, a write to /etc and a fetch say allowing will not help and fail when allowed; a write inside the workspace says nothing", async () => {
  expect(existsSync(TARGET)).toBe(false);
  h = await startGateHarness({
    config: { provider: { name: "scripted", script: "turns.yaml" }, mode: "approve", sandbox: "workspace-write" },
    files: {
      "turns.yaml": `
turns:
  - tool_calls: [{ name: developer__write_file, arguments: { path: "${TARGET}", content: "x" } }]
  - tool_calls: [{ name: developer__write_file, arguments: { path: "inside.txt", content: "x" } }]
  - tool_calls: [{ name: developer__shell, arguments: { command: "echo x > ${TARGET}" } }]
  - tool_calls: [{ name: developer__shell, arguments: { command: "echo x > inside-shell.txt" } }]
  - tool_calls: [{ name: developer__shell, arguments: { command: "curl -sS https://example.com/" } }]
  - text: done
`,
    },
  });
  const s = await h.createSession({ mode: "approve", sandbox: "workspace-write" });
  const reply = await harnessSse(h, `/sessions/${s.id}/reply`, { method: "POST", json: { message: "go" } });
  const approver = { "X-Airlock-Approver": h.rt.tokens.approverToken };
  const seen = new Set<string>();
  /** The next event of `name` not seen before (cards by request id, results by call id: the calls come one after another). */
  const next = async (name: string, key: string) =>
    (await reply.waitFor((e) => e.event === name && !seen.has(e.data[key]) && (seen.add(e.data[key]), true), 60_000)).data;
  const nextCard = () => next("action_required", "request_id");
  const allow = async (c: Record<string, any>) => {
    const r = await h!.api(`/actions/${c.request_id}`, { method: "POST", json: { decision: "allow_once" }, headers: approver });
    expect(r.status).toBe(200);
    return next("tool_result", "call_id");
  };

  // 1. developer__write_file to /etc: the card says so, in the API, the event, the CLI list and the audit row
  const fileOut = await nextCard();
  expect(fileOut.tool).toBe("developer__write_file");
  expect(fileOut.will_fail).toStartWith(`allowing this will not help: the sandbox policy workspace-write will still refuse writing ${TARGET}`);
  expect((await h.api(`/sessions/${s.id}/actions`).then((r) => r.json()) as any).actions[0].will_fail).toBe(fileOut.will_fail);
  const listed = await cli(["actions", "list"]);
  expect(listed.code).toBe(0);
  expect(listed.stdout).toContain(`    ! ${fileOut.will_fail}\n`);
  const parked = await h.rt.store.listAudit({ request_id: fileOut.request_id, kind: "card_parked" });
  expect((parked[0]!.detail as any).will_fail).toBe(fileOut.will_fail);
  const fileResult = await allow(fileOut);
  expect(fileResult).toMatchObject({ ok: false, error: { code: "path_outside_workspace" } });
  expect(existsSync(TARGET)).toBe(false);

  // 2. developer__write_file inside the workspace: no warning, and it writes
  const fileIn = await nextCard();
  expect(fileIn.tool).toBe("developer__write_file");
  expect(fileIn).not.toHaveProperty("will_fail");
  expect(await allow(fileIn)).toMatchObject({ ok: true });
  expect(readFileSync(join(h.workspace, "inside.txt"), "utf8")).toBe("x");

  // 3. a shell redirect to /etc: the floor's card (a protected path) also says the sandbox will refuse it; allowed, it is refused
  const shellOut = await nextCard();
  expect(shellOut).toMatchObject({ tool: "developer__shell", inspector: "sensitive_ops", requires_user_proof: true });
  expect(shellOut.will_fail).toBe(
    `allowing this will not help: the sandbox policy workspace-write will still refuse writing ${TARGET} (only the workspace and a private /tmp are writable)`,
  );
  const shellResult = await allow(shellOut);
  expect(JSON.stringify(shellResult)).toContain("Read-only file system");
  expect(existsSync(TARGET)).toBe(false);

  // 4. a shell redirect inside the workspace: no warning, and it writes
  const shellIn = await nextCard();
  expect(shellIn.tool).toBe("developer__shell");
  expect(shellIn).not.toHaveProperty("will_fail");
  await allow(shellIn);
  expect(readFileSync(join(h.workspace, "inside-shell.txt"), "utf8")).toBe("x\n");

  // 5. a fetch under a policy with no network: said, and allowed it cannot even resolve the host
  const fetch = await nextCard();
  expect(fetch.will_fail).toBe("allowing this will not help: the sandbox policy workspace-write has no network, so curl cannot reach example.com");
  expect(JSON.stringify(await allow(fetch))).toContain("Could not resolve host");
  expect((await reply.waitFor((e) => e.event === "turn_finished")).data.status).toBe("completed");
});
