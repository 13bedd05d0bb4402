/**
 * @module test/security/approval-binds-no-pseudo-file
 * card/bound-files.ts hashes the workspace files a call names (the script of `sh x.sh`, a write's target) and
 * followed a symbolic link there to whatever it names: a link the model made in the workspace, `x.sh -> /proc/kmsg`,
 * then a shell call `sh x.sh` that asks, had airlock — as root, on the host — read /proc/kmsg to its end to hash it,
 * consuming kernel log lines that syslog then never got (tracefs's `trace_pipe` likewise), before any person decided.
 * Now a kernel pseudo file (config/paths.ts `pseudoFileAt`: under /proc or /sys, or on procfs/sysfs/… mounted
 * anywhere) is bound as a link with no content hash, never read. Seen over the real runtime (a scripted model's shell
 * call parks a card) with side-effect-free targets (`/proc/self/status`, a sysfs file), and through `bindFiles`'s
 * own entry point in a child process as root and as `nobody`.
 */
import { afterEach, expect, test } from "bun:test";
import { symlinkSync } from "node:fs";
import { join } from "node:path";
import { sharedTempDir, testUsers } from "../as-user.ts";
import { harnessSse, startHarness, type Harness } from "../harness.ts";

const SRC = join(import.meta.dir, "..", "..", "src");
const TARGETS = ["/proc/self/status", "/sys/devices/system/cpu/online"];

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

test("sh x.sh with x.sh a workspace link to /proc/self/status: the card binds the link, airlock never read the file", async () => {
  const call = { name: "developer__shell", arguments: { command: "sh x.sh; sh y.sh" } };
  h = await startHarness({
    config: { provider: { name: "scripted", script: "turns.yaml" }, mode: "smart", sandbox: "workspace-write" },
    files: { "turns.yaml": `\nturns:\n  - tool_calls: [${JSON.stringify(call)}]\n  - text: "done"\n` },
    workspaceFiles: { "README": "x\n" },
  });
  symlinkSync(TARGETS[0]!, join(h.workspace, "x.sh"));
  symlinkSync(TARGETS[1]!, join(h.workspace, "y.sh"));
  const s = await h.createSession({ mode: "smart", sandbox: "workspace-write" });
  const reply = await harnessSse(h, `/sessions/${s.id}/reply`, { method: "POST", json: { message: "go" } });
  const card = (await reply.waitFor((e) => e.event === "action_required")).data;
  reply.close();
  expect(card.files).toEqual([
    { path: "x.sh", kind: "symlink", link: TARGETS[0] },
    { path: "y.sh", kind: "symlink", link: TARGETS[1] },
  ]);
});

for (const user of testUsers()) {
  test(`bindFiles never reads a pseudo file a workspace link names (${user.name})`, () => {
    const ws = sharedTempDir("airlock-bind-pseudo-");
    const files = TARGETS.map((t, k) => {
      const rel = `s${k}.sh`;
      symlinkSync(t, join(ws, rel));
      return { rel, abs: join(ws, rel) };
    });
    const code = `
import { bindFiles } from ${JSON.stringify(join(SRC, "card", "bound-files.ts"))};
console.log(JSON.stringify(await bindFiles(${JSON.stringify(files)}, ${JSON.stringify(ws)})));
`;
    const r = Bun.spawnSync([...user.prefix, process.execPath, "-e", code], { stdin: "ignore", stdout: "pipe", stderr: "pipe" });
    expect(r.stderr.toString()).toBe("");
    expect(JSON.parse(r.stdout.toString())).toEqual(files.map((f, k) => ({ path: f.rel, kind: "symlink", link: TARGETS[k] })));
  });
}
