/**
 * @module test/security/console-preview-refusals
 * The console's card preview (`GET /sessions/:id/actions/:request_id/preview`) reads the file a write or
 * edit card targets, so it carries the file tools' walls and more: never airlock's data dir (its tokens,
 * its database), never outside the session's workspace (symlinks followed), regular files only (a FIFO is
 * never opened), at most 1 MiB. Inside those walls it shows the diff the call would make.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { harnessSse, startHarness, type Harness } from "../harness.ts";

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

/** A smart-mode session whose first turn makes `call`; resolves with the session id and the parked card. */
async function parked(
  call: { name: string; arguments: Record<string, unknown> },
  opts: { workspaceFiles?: Record<string, string>; workspace?: (h: Harness) => string; dataDir?: string; prepare?: (h: Harness) => void } = {},
) {
  h = await startHarness({
    ...(opts.dataDir ? { dataDir: opts.dataDir } : {}),
    config: { provider: { name: "scripted", script: "turns.yaml" }, mode: "smart" },
    files: { "turns.yaml": `turns:\n  - tool_calls: [${JSON.stringify(call)}]\n  - text: done\n` },
    workspaceFiles: opts.workspaceFiles ?? {},
  });
  opts.prepare?.(h);
  const s = await h.createSession(opts.workspace ? { workspace: opts.workspace(h) } : {});
  const reply = await harnessSse(h, `/sessions/${s.id}/reply`, { method: "POST", json: { message: "go" } });
  const card = (await reply.waitFor((e) => e.event === "action_required")).data;
  return { id: s.id as string, card };
}

async function preview(id: string, rid: string): Promise<{ status: number; body: any; text: string }> {
  const res = await h!.api(`/sessions/${id}/actions/${rid}/preview`);
  const text = await res.text();
  return { status: res.status, body: JSON.parse(text), text };
}

describe("console preview", () => {
  test("a write inside the workspace shows every line of the diff against the current file", async () => {
    const { id, card } = await parked({ name: "developer__write_file", arguments: { path: "a.txt", content: "one\nTWO\nthree\n" } }, { workspaceFiles: { "a.txt": "one\ntwo\nthree\n" } });
    const p = await preview(id, card.request_id);
    expect(p.status).toBe(200);
    expect(p.body).toEqual({
      request_id: card.request_id,
      tool: "developer__write_file",
      path: "a.txt",
      exists: true,
      size: 14,
      exact: true,
      diff: [
        { op: " ", text: "one" },
        { op: "-", text: "two" },
        { op: "+", text: "TWO" },
        { op: " ", text: "three" },
      ],
    });
  });

  test("an edit is applied to the current file; an edit that would not apply says so", async () => {
    const { id, card } = await parked({ name: "developer__edit_file", arguments: { path: "b.txt", old_string: "beta", new_string: "BETA" } }, { workspaceFiles: { "b.txt": "alpha\nbeta\n" } });
    const p = await preview(id, card.request_id);
    expect(p.body.diff).toEqual([
      { op: " ", text: "alpha" },
      { op: "-", text: "beta" },
      { op: "+", text: "BETA" },
    ]);
    await h!.close();
    const again = await parked({ name: "developer__edit_file", arguments: { path: "b.txt", old_string: "gamma", new_string: "x" } }, { workspaceFiles: { "b.txt": "alpha\nbeta\n" } });
    const q = await preview(again.id, again.card.request_id);
    expect(q.status).toBe(200);
    expect(q.body.problem).toContain("occurs 0 times");
  });

  test("a symlink in the workspace leading to the API token is refused, and the token is not in the answer", async () => {
    // The floor refuses a write into the data dir outright (no card); a link swapped in after the card
    // parked is what the preview must refuse by itself.
    const { id, card } = await parked({ name: "developer__write_file", arguments: { path: "link.txt", content: "x" } });
    rmSync(join(h!.workspace, "link.txt"), { force: true });
    symlinkSync(join(h!.dataDir, "api-token"), join(h!.workspace, "link.txt"));
    const p = await preview(id, card.request_id);
    expect(p.status).toBe(403);
    expect(p.body.error).toBe("preview_refused");
    expect(p.text).not.toContain(h!.token);
  });

  // A workspace that is the data dir gets no card at all: the floor refuses every file-tool path in it
  // (test/security/file-tools-credentials-and-data-dir.test.ts). What can still reach a preview is a path
  // that led elsewhere when the card parked and into the data dir after.
  test("a folder swapped for a link into the data dir after the card parked is refused", async () => {
    const parent = mkdtempSync(join(tmpdir(), "airlock-console-ws-"));
    try {
      // The card parks for a folder outside the data dir, which then becomes a link into it.
      const outer = await parked({ name: "developer__write_file", arguments: { path: "inner/approver-token", content: "x" } }, { dataDir: join(parent, "data"), workspace: () => parent });
      symlinkSync(join(parent, "data"), join(parent, "inner"));
      const p2 = await preview(outer.id, outer.card.request_id);
      expect([p2.status, p2.body.error]).toEqual([403, "preview_refused"]);
      expect(p2.body.message).toContain("data dir");
      expect(p2.text).not.toContain(readFileSync(join(parent, "data", "approver-token"), "utf8").trim());
    } finally {
      await h?.close();
      h = undefined;
      rmSync(parent, { recursive: true, force: true });
    }
  });

  test("a path outside the workspace, a FIFO and a file over 1 MiB are refused", async () => {
    const outside = await parked({ name: "developer__write_file", arguments: { path: "/etc/hostname", content: "x" } });
    const p1 = await preview(outside.id, outside.card.request_id);
    expect([p1.status, p1.body.error]).toEqual([403, "preview_refused"]);
    expect(p1.body.message).toContain("outside the workspace");
    await h!.close();

    const fifo = await parked({ name: "developer__write_file", arguments: { path: "pipe", content: "x" } }, { prepare: (hh) => execFileSync("mkfifo", [join(hh.workspace, "pipe")]) });
    const p2 = await preview(fifo.id, fifo.card.request_id);
    expect([p2.status, p2.body.error]).toEqual([403, "preview_refused"]);
    expect(p2.body.message).toContain("not a regular file");
    await h!.close();

    const big = await parked({ name: "developer__write_file", arguments: { path: "big.txt", content: "x" } }, { prepare: (hh) => writeFileSync(join(hh.workspace, "big.txt"), Buffer.alloc(1024 * 1024 + 1, 97)) });
    const p3 = await preview(big.id, big.card.request_id);
    expect([p3.status, p3.body.error]).toEqual([403, "preview_refused"]);
    expect(p3.body.message).toContain("preview limit");
  });

  test("credential files are refused even inside the workspace: .env, an SSH key, a .git-credentials file", async () => {
    for (const [target, files] of [
      [".env", { ".env": "SECRET=hunter2\n" }],
      ["keys/.ssh/id_ed25519", { "keys/.ssh/id_ed25519": "PRIVATE hunter2\n" }],
      [".git-credentials", { ".git-credentials": "https://u:hunter2@example.com\n" }],
    ] as const) {
      const { id, card } = await parked({ name: "developer__write_file", arguments: { path: target, content: "x" } }, { workspaceFiles: files });
      const p = await preview(id, card.request_id);
      expect([target, p.status, p.body.error]).toEqual([target, 403, "preview_refused"]);
      expect(p.body.message).toContain("credential");
      expect(p.text).not.toContain("hunter2");
      await h!.close();
      h = undefined;
    }
  });

  test("a card of another tool has no preview; an unknown card is 404; the preview needs the bearer token", async () => {
    const { id, card } = await parked({ name: "developer__shell", arguments: { command: "touch x" } });
    const p = await preview(id, card.request_id);
    expect([p.status, p.body.error]).toEqual([400, "bad_request"]);
    const q = await preview(id, "act_nope");
    expect([q.status, q.body.error]).toEqual([404, "not_found"]);
    const r = await fetch(`${h!.url}/sessions/${id}/actions/${card.request_id}/preview`);
    expect(r.status).toBe(401);
  });
});
