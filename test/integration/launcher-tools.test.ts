/**
 * The host tools end to end at the tool level (gate not involved): developer__shell, the file tools,
 * the interpreters — real processes, real bubblewrap — plus timeouts with process-tree kill checked by
 * pid, elevation honoured for one call only, and refusals when bubblewrap is hidden.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { AirlockError } from "../../src/errors.ts";
import { editFileTool, listDirTool, readFileTool, writeFileTool } from "../../src/tool/files.ts";
import { hostTools } from "../../src/tool/host-tools.ts";
import { jsTool, pythonTool } from "../../src/tool/interpreter.ts";
import { shellTool } from "../../src/tool/shell.ts";
import { makeToolContext, runTool, tempWorkspace } from "../fixtures/tool-context.ts";
import { isAlive, pidsWith, sleepMarker, waitForPids } from "./launcher-helpers.ts";

const cleanups: (() => void)[] = [];
afterAll(() => cleanups.forEach((c) => c()));
function workspace(): string {
  const w = tempWorkspace("airlock-tools-");
  cleanups.push(w.cleanup);
  return w.dir;
}

async function refusal(p: Promise<unknown>): Promise<AirlockError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof AirlockError) return e;
    throw e;
  }
  throw new Error("expected a refusal, but the call ran");
}

describe("hostTools", () => {
  test("lists the shell, file and interpreter tools with their Claude Code names", () => {
    expect(hostTools().map((t) => [t.name, t.claude?.name ?? null, typeof t.readOnly === "boolean" ? t.readOnly : "fn"])).toEqual([
      ["developer__shell", "Bash", "fn"],
      ["developer__read_file", "Read", true],
      ["developer__write_file", "Write", false],
      ["developer__edit_file", "Edit", false],
      ["developer__list_dir", null, true],
      ["interpreter__python", null, false],
      ["interpreter__js", null, false],
    ]);
  });

  test("claude aliases give Claude Code's input shapes, with the resolved absolute file_path", () => {
    const ws = workspace();
    mkdirSync(path.join(ws, "real"));
    symlinkSync("real", path.join(ws, "alias"));
    expect(shellTool.claude!.input({ command: "ls", timeout_s: 2 }, { workspace: ws })).toEqual({ command: "ls", timeout: 2000 });
    expect(readFileTool.claude!.input({ path: "alias/a.txt" }, { workspace: ws })).toEqual({ file_path: path.join(ws, "real/a.txt") });
    expect(editFileTool.claude!.input({ path: "b", old_string: "x", new_string: "y" }, { workspace: ws })).toEqual({ file_path: path.join(ws, "b"), old_string: "x", new_string: "y" });
  });
});

describe("developer__shell", () => {
  test("runs bash -c in the workspace under the session policy", async () => {
    const ws = workspace();
    const r = await runTool(shellTool, { command: "pwd; echo hi > f.txt" }, makeToolContext({ workspace: ws, sandbox: "workspace-write" }));
    expect(r).toEqual({ exit_code: 0, stdout: `${ws}\n`, stderr: "", timed_out: false, truncated: false, policy: "workspace-write" });
    expect(readFileSync(path.join(ws, "f.txt"), "utf8")).toBe("hi\n");
  });

  test("execution_backend: external refuses with external_backend", async () => {
    const ws = workspace();
    const e = await refusal(runTool(shellTool, { command: "touch ran" }, makeToolContext({ workspace: ws, config: { execution_backend: "external" } })));
    expect(e.code).toBe("external_backend");
    expect(existsSync(path.join(ws, "ran"))).toBe(false);
  });

  test("with bubblewrap hidden from PATH, read-only refuses with sandbox_unavailable", async () => {
    const ws = workspace();
    const bin = path.join(ws, "bin");
    mkdirSync(bin);
    symlinkSync("/bin/bash", path.join(bin, "bash"));
    const saved = process.env.PATH;
    process.env.PATH = bin;
    try {
      const e = await refusal(runTool(shellTool, { command: "echo hi > /dev/null" }, makeToolContext({ workspace: ws, sandbox: "read-only" })));
      expect(e.code).toBe("sandbox_unavailable");
      expect(e.message).toContain("install bubblewrap");
    } finally {
      process.env.PATH = saved;
    }
  });

  test("output beyond limits.max_output_bytes is cut with a marker", async () => {
    const ws = workspace();
    const r = await runTool(shellTool, { command: "seq 1 100000" }, makeToolContext({ workspace: ws, config: { limits: { max_output_bytes: 100 } } }));
    expect(r.truncated).toBe(true);
    expect(r.stdout).toContain("[airlock: output truncated:");
  });
});

describe("developer__shell timeouts kill the whole process tree", () => {
  const cases = (m: string[]) => [
    { name: "a background job and a foreground sleep", command: `sleep ${m[0]} & sleep ${m[1]}`, n: 2 },
    { name: "a setsid child", command: `setsid sleep ${m[0]} & wait`, n: 1 },
    { name: "a child that ignores SIGTERM", command: `( trap '' TERM; exec sleep ${m[0]} ) & sleep ${m[1]}`, n: 2 },
  ];
  for (const policy of ["workspace-write", "danger-full-access"] as const) {
    for (const c of cases(["x", "y"])) {
      test(`${policy}: ${c.name} under a 2 s timeout returns timed_out (long before its 300 s sleeps end) and leaves no process behind`, async () => {
        const ws = workspace();
        const m = [sleepMarker(), sleepMarker()];
        const command = cases(m).find((x) => x.name === c.name)!.command;
        const t0 = performance.now();
        const call = runTool(shellTool, { command, timeout_s: 2 }, makeToolContext({ workspace: ws, sandbox: policy }));
        // On a loaded machine the 2 s timeout can end the tree before its sleeps are seen here: then the
        // pids are not asserted, but nothing with their markers may be left either way.
        const seen = async () => [...(await waitForPids(m[0]!, 1, 60_000)), ...(c.n > 1 ? await waitForPids(m[1]!, 1, 60_000) : [])];
        const pids = await Promise.race([seen(), call.then(() => null)]);
        if (pids !== null) expect(pids.length).toBe(c.n);
        const r = await call;
        const elapsed = performance.now() - t0;
        expect(r.timed_out).toBe(true);
        expect(r.exit_code).toBeNull();
        expect(elapsed).toBeLessThan(60_000); // not waiting for the 300 s sleeps; speed is not asserted here
        expect((pids ?? []).filter(isAlive)).toEqual([]);
        expect([...pidsWith(m[0]!), ...pidsWith(m[1]!)].filter(isAlive)).toEqual([]);
      });
    }

    test(`${policy}: a setsid background job still running when the command ends is killed too`, async () => {
      const ws = workspace();
      const m = sleepMarker();
      execFileSync("mkfifo", [path.join(ws, "go")]);
      const call = runTool(shellTool, { command: `setsid sleep ${m} & read -r line < go; echo done` }, makeToolContext({ workspace: ws, sandbox: policy }));
      const pids = await waitForPids(m, 1);
      writeFileSync(path.join(ws, "go"), "go\n"); // lets the command end while its setsid child runs
      const r = await call;
      expect(r.stdout).toBe("done\n");
      expect(r.timed_out).toBe(false);
      expect(pids.filter(isAlive)).toEqual([]);
    });
  }

  test("cancel (the call's signal) kills the tree and the call fails with cancelled", async () => {
    const ws = workspace();
    const m = sleepMarker();
    const ac = new AbortController();
    const call = runTool(shellTool, { command: `setsid sleep ${m} & sleep ${m}` }, makeToolContext({ workspace: ws, signal: ac.signal }));
    const pids = await waitForPids(m, 2);
    ac.abort();
    const e = await refusal(call);
    expect(e.code).toBe("cancelled");
    expect(pids.filter(isAlive)).toEqual([]);
  });
});

describe("elevation at the tool level (the gate resolved it: ToolContext.policy)", () => {
  test("an approved elevation lets one write happen; the next identical call is restricted again", async () => {
    const ws = workspace();
    const args = { command: "echo elevated >> out.txt", sandbox_permissions: "workspace-write", justification: "write the build output" };
    const first = await runTool(shellTool, args, makeToolContext({ workspace: ws, sandbox: "read-only", elevatedPolicy: "workspace-write" }));
    expect(first).toMatchObject({ exit_code: 0, policy: "workspace-write" });
    expect(readFileSync(path.join(ws, "out.txt"), "utf8")).toBe("elevated\n");
    const second = await runTool(shellTool, args, makeToolContext({ workspace: ws, sandbox: "read-only" }));
    expect(second.policy).toBe("read-only");
    expect(second.exit_code).not.toBe(0);
    expect(second.stderr).toContain("Read-only file system");
    expect(readFileSync(path.join(ws, "out.txt"), "utf8")).toBe("elevated\n");
  });

  test("the file tools honour an approved elevation for that call only", async () => {
    const ws = workspace();
    await runTool(writeFileTool, { path: "e.txt", content: "1" }, makeToolContext({ workspace: ws, sandbox: "read-only", elevatedPolicy: "workspace-write" }));
    expect(readFileSync(path.join(ws, "e.txt"), "utf8")).toBe("1");
    const e = await refusal(runTool(writeFileTool, { path: "e.txt", content: "2" }, makeToolContext({ workspace: ws, sandbox: "read-only" })));
    expect(e.code).toBe("read_only_policy");
  });
});

describe("file tools", () => {
  function setup() {
    const ws = workspace();
    const outside = workspace();
    writeFileSync(path.join(outside, "secret.txt"), "outside secret\n");
    mkdirSync(path.join(ws, "src"));
    writeFileSync(path.join(ws, "src/a.txt"), "alpha\nbeta\n");
    symlinkSync(outside, path.join(ws, "escape"));
    symlinkSync("src", path.join(ws, "inlink"));
    mkdirSync(path.join(ws, ".git/hooks"), { recursive: true });
    return { ws, outside };
  }

  test("a symlink that leads out of the workspace is refused with path_outside_workspace (read, list, write, edit)", async () => {
    const { ws, outside } = setup();
    const ctx = makeToolContext({ workspace: ws, sandbox: "workspace-write" });
    const codes = [
      (await refusal(runTool(readFileTool, { path: "escape/secret.txt" }, ctx))).code,
      (await refusal(runTool(listDirTool, { path: "escape" }, ctx))).code,
      (await refusal(runTool(writeFileTool, { path: "escape/new.txt", content: "x" }, ctx))).code,
      (await refusal(runTool(editFileTool, { path: "escape/secret.txt", old_string: "outside", new_string: "x" }, ctx))).code,
      (await refusal(runTool(writeFileTool, { path: path.join(outside, "direct.txt"), content: "x" }, ctx))).code,
    ];
    expect(codes).toEqual(["path_outside_workspace", "path_outside_workspace", "path_outside_workspace", "path_outside_workspace", "path_outside_workspace"]);
    expect(existsSync(path.join(outside, "new.txt"))).toBe(false);
    expect(existsSync(path.join(outside, "direct.txt"))).toBe(false);
    expect(readFileSync(path.join(outside, "secret.txt"), "utf8")).toBe("outside secret\n");
  });

  test("a link that stays inside works for reading, writing and editing", async () => {
    const { ws } = setup();
    const ctx = makeToolContext({ workspace: ws, sandbox: "workspace-write" });
    expect(await runTool(readFileTool, { path: "inlink/a.txt" }, ctx)).toEqual({ path: path.join(ws, "src/a.txt"), content: "alpha\nbeta\n", size: 11, truncated: false });
    expect(await runTool(writeFileTool, { path: "inlink/new/b.txt", content: "bee" }, ctx)).toEqual({ path: path.join(ws, "src/new/b.txt"), bytes: 3 });
    expect(await runTool(editFileTool, { path: "inlink/a.txt", old_string: "beta", new_string: "gamma" }, ctx)).toEqual({ path: path.join(ws, "src/a.txt"), replacements: 1 });
    expect(readFileSync(path.join(ws, "src/a.txt"), "utf8")).toBe("alpha\ngamma\n");
    const listed = await runTool(listDirTool, { path: "." }, ctx);
    expect(listed.entries.map((e: { name: string; type: string }) => `${e.name}:${e.type}`)).toEqual([".git:dir", "escape:symlink", "inlink:symlink", "src:dir"]);
  });

  test("read-only refuses every write with read_only_policy; workspace-write refuses .git/hooks and .git/config with protected_path", async () => {
    const { ws } = setup();
    const ro = makeToolContext({ workspace: ws, sandbox: "read-only" });
    expect((await refusal(runTool(writeFileTool, { path: "x.txt", content: "x" }, ro))).code).toBe("read_only_policy");
    expect((await refusal(runTool(editFileTool, { path: "src/a.txt", old_string: "alpha", new_string: "x" }, ro))).code).toBe("read_only_policy");
    const ww = makeToolContext({ workspace: ws, sandbox: "workspace-write" });
    expect((await refusal(runTool(writeFileTool, { path: ".git/hooks/pre-commit", content: "#!/bin/sh" }, ww))).code).toBe("protected_path");
    expect((await refusal(runTool(writeFileTool, { path: ".git/config", content: "[core]" }, ww))).code).toBe("protected_path");
    expect(existsSync(path.join(ws, ".git/hooks/pre-commit"))).toBe(false);
    expect(existsSync(path.join(ws, ".git/config"))).toBe(false);
  });

  test("danger-full-access writes outside the workspace", async () => {
    const { ws, outside } = setup();
    await runTool(writeFileTool, { path: "escape/made.txt", content: "ok" }, makeToolContext({ workspace: ws, sandbox: "danger-full-access" }));
    expect(readFileSync(path.join(outside, "made.txt"), "utf8")).toBe("ok");
  });

  test("edit_file needs exactly one occurrence; a missing file is file_not_found", async () => {
    const { ws } = setup();
    const ctx = makeToolContext({ workspace: ws });
    writeFileSync(path.join(ws, "twice.txt"), "x x");
    const none = await refusal(runTool(editFileTool, { path: "src/a.txt", old_string: "zeta", new_string: "y" }, ctx));
    const two = await refusal(runTool(editFileTool, { path: "twice.txt", old_string: "x", new_string: "y" }, ctx));
    const missing = await refusal(runTool(readFileTool, { path: "nope.txt" }, ctx));
    expect([none.code, two.code, missing.code]).toEqual(["edit_no_match", "edit_no_match", "file_not_found"]);
    expect(two.message).toContain("occurs 2 times");
  });

  test("an absolute path outside the workspace, spelled as such, may be read (the security floor judges it)", async () => {
    const { ws, outside } = setup();
    const r = await runTool(readFileTool, { path: path.join(outside, "secret.txt") }, makeToolContext({ workspace: ws, sandbox: "read-only" }));
    expect(r.content).toBe("outside secret\n");
  });
});

describe("interpreters", () => {
  test("interpreter__python runs code from stdin under the session policy", async () => {
    const ws = workspace();
    const code = "import sys, os\nprint(sys.argv[0], 6*7)\nopen('py.txt','w').write('py')\n";
    const r = await runTool(pythonTool, { code }, makeToolContext({ workspace: ws, sandbox: "workspace-write" }));
    expect(r).toMatchObject({ exit_code: 0, stdout: "- 42\n", timed_out: false, policy: "workspace-write" });
    expect(readFileSync(path.join(ws, "py.txt"), "utf8")).toBe("py");
    const ro = await runTool(pythonTool, { code: "open('ro.txt','w')" }, makeToolContext({ workspace: ws, sandbox: "read-only" }));
    expect(ro.exit_code).not.toBe(0);
    expect(ro.stderr).toContain("Read-only file system");
    expect(existsSync(path.join(ws, "ro.txt"))).toBe(false);
  });

  test("interpreter__js runs code from stdin with the airlock/bun binary, and cannot reach the network", async () => {
    const ws = workspace();
    const server = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
    try {
      const code = `console.log(6*7, process.env.BUN_BE_BUN);\ntry { await fetch("http://127.0.0.1:${server.port}/"); console.log("reached") } catch { console.log("blocked") }\n`;
      const r = await runTool(jsTool, { code }, makeToolContext({ workspace: ws, sandbox: "read-only" }));
      expect(r).toMatchObject({ exit_code: 0, stdout: "42 1\nblocked\n", timed_out: false, policy: "read-only" });
    } finally {
      server.stop(true);
    }
  });

  test("interpreter source never lands in a host temp file", async () => {
    const ws = workspace();
    const marker = `airlock_marker_${Math.random().toString(36).slice(2)}`;
    const stamp = path.join(ws, ".stamp");
    writeFileSync(stamp, "");
    const r = await runTool(pythonTool, { code: `print("${marker}")` }, makeToolContext({ workspace: ws }));
    expect(r.stdout).toBe(`${marker}\n`);
    // every file written in the temp dirs since the call began (a clone of this repo may live there too: only new files are read)
    const hits = execFileSync("bash", ["-c", `find ${tmpdir()} /var/tmp -xdev -type f -newer ${stamp} -size -4M -print0 2>/dev/null | xargs -0 -r grep -ls ${marker} 2>/dev/null || true`], {
      encoding: "utf8",
    }).trim();
    expect(hits).toBe("");
  });
});
