/**
 * @module test/security/floor-globs-never-hang-airlock
 * The security floor expands the globs of a shell command's write targets against the workspace's real file
 * names, in airlock's own thread, before the call runs. The model writes both: a file named with 200 `a`s and
 * `rm *a*a*a*a*a*a*a*b` made the glob's regular expression backtrack for hours (4 `a`s on a 100-character
 * name already took 2 s), freezing the gate, the API and every other session of `airlock serve`. A glob is
 * now matched by a linear wildcard walk. Judged by the real floor in a bounded child process, as root and
 * as `nobody`; a hang fails the test instead of stalling it.
 */
import { expect, test } from "bun:test";
import { chmodSync, mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { sharedTempDir, testUsers } from "../as-user.ts";

const root = sharedTempDir("airlock-floor-glob-hang-");
const ws = path.join(root, "ws");
mkdirSync(ws);
chmodSync(ws, 0o777);
writeFileSync(path.join(ws, "a".repeat(200)), "x");
writeFileSync(path.join(ws, "keep.txt"), "x");
const JUDGE = path.join(import.meta.dir, "..", "fixtures", "floor-judge.ts");

for (const user of testUsers()) {
  test(`as ${user.name}: a write target glob built to backtrack is judged at once, with the shell's meaning`, async () => {
    const commands = ["rm *a*a*a*a*a*a*a*a*a*a*b", "rm *a*a*a*a*a*a*a*a*a*a*a", "echo x > k*p.t?t", "echo x > /etc/host?"];
    const p = Bun.spawn([...user.prefix, process.execPath, JUDGE, JSON.stringify({ workspace: ws, home: root, policy: "workspace-write", commands })], { stdout: "pipe", stderr: "pipe" });
    // generous: judging takes well under a second; the hang it replaces took hours
    const bound = setTimeout(() => p.kill("SIGKILL"), 60_000);
    const [code, out, err] = await Promise.all([p.exited, new Response(p.stdout).text(), new Response(p.stderr).text()]);
    clearTimeout(bound);
    expect({ code, err }).toEqual({ code: 0, err: "" });
    const findings = JSON.parse(out) as string[][];
    // inside the workspace: no finding; a glob that leads out of it still does
    expect(findings.slice(0, 3)).toEqual([[], [], []]);
    expect(findings[3]!.join(" ")).toContain("/etc/host?");
  }, 90_000);
}
