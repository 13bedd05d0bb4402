import { describe, expect, test } from "bun:test";
import { mkdtempSync, realpathSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { callBinding, resolvedCall } from "./binding.ts";
import { sanitizedEnv } from "./env.ts";

describe("binding.callBinding", () => {
  const ws = realpathSync(mkdtempSync(path.join(tmpdir(), "airlock-bind-")));
  const other = realpathSync(mkdtempSync(path.join(tmpdir(), "airlock-bind-")));
  const base = { tool: "developer__shell", args: { command: "make", sandbox_permissions: "danger-full-access", justification: "j" }, workspace: ws };

  test("is the same for the same call, whatever the key order or the workspace's spelling", () => {
    const alias = path.join(other, "alias");
    symlinkSync(ws, alias);
    expect(callBinding({ ...base, args: { justification: "j", sandbox_permissions: "danger-full-access", command: "make" } })).toBe(callBinding(base));
    expect(callBinding({ ...base, workspace: alias })).toBe(callBinding(base));
  });

  test("differs for another command, another cwd or another tool (executable)", () => {
    const b = callBinding(base);
    expect(callBinding({ ...base, args: { ...base.args, command: "make install" } })).not.toBe(b);
    expect(callBinding({ ...base, workspace: other })).not.toBe(b);
    expect(callBinding({ ...base, tool: "interpreter__python" })).not.toBe(b);
    rmSync(ws, { recursive: true, force: true });
    rmSync(other, { recursive: true, force: true });
  });

  test("resolvedCall gives the real executable, cwd and file target", () => {
    const w = realpathSync(mkdtempSync(path.join(tmpdir(), "airlock-bind-")));
    symlinkSync("/etc", path.join(w, "etc-link"));
    const shell = resolvedCall({ tool: "developer__shell", args: { command: "ls" }, workspace: w });
    expect(shell.executable).toBe(realpathSync(Bun.which("bash", { PATH: sanitizedEnv().PATH })!));
    expect(shell.cwd).toBe(w);
    expect(resolvedCall({ tool: "developer__read_file", args: { path: "etc-link/passwd" }, workspace: w })).toEqual({ executable: null, cwd: w, path: { real: "/etc/passwd", inside: false } });
    rmSync(w, { recursive: true, force: true });
  });
});
