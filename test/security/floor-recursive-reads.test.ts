/**
 * Under danger-full-access nothing hides the credential stores, so a recursive read of a folder that holds
 * one asks (security floor): since smart mode lets known read-only commands (`grep`, `rg`) run without its
 * own card, `grep -r token ~` would otherwise print ~/.aws/credentials with nobody asked.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { securityFloor } from "../../src/gate/inspectors/security-floor.ts";

const root = realpathSync(mkdtempSync(path.join(tmpdir(), "airlock-rec-")));
const home = path.join(root, "home");
const ws = path.join(root, "ws");
mkdirSync(path.join(home, ".aws"), { recursive: true });
writeFileSync(path.join(home, ".aws", "credentials"), "[default]\naws_secret_access_key=x\n");
mkdirSync(path.join(ws, "src"), { recursive: true });
afterAll(() => rmSync(root, { recursive: true, force: true }));

const judge = (command: string, policy: "danger-full-access" | "workspace-write" | "read-only") =>
  securityFloor({ name: "developer__shell" }, { command }, { workspace: ws, policy, home, PATH: "/usr/bin:/bin" });

describe("recursive reads under danger-full-access", () => {
  for (const command of ["grep -r token ~", "grep -R token $HOME", "grep --recursive key ~", "rg aws_secret ~", `rg -uu key ${root}`, "rg key /", `grep -rn x ${home}/.aws`, "egrep -r x ~"]) {
    test(`${command} asks`, () => {
      expect(judge(command, "danger-full-access")).toMatchObject({ kind: "ask", inspector: "sensitive_ops" });
    });
  }
  for (const command of ["grep -r token src", "rg token", "grep token ~/notes.txt", "grep -r x ."]) {
    test(`${command} (no credential store under it) is allowed`, () => {
      expect(judge(command, "danger-full-access")).toEqual({ kind: "allow", inspector: "sensitive_ops" });
    });
  }
  test("confined policies hide the stores: grep -r token ~ is the sandbox's business, not a card", () => {
    expect(judge("grep -r token ~", "workspace-write")).toEqual({ kind: "allow", inspector: "sensitive_ops" });
    expect(judge("rg key /", "read-only")).toEqual({ kind: "allow", inspector: "sensitive_ops" });
  });
});
