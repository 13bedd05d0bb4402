/**
 * @module test/security/floor-recursive-diffs
 * Under danger-full-access nothing hides the credential stores. `diff -rN ~ empty/` and
 * `git diff --no-index ~ empty/` print the whole content of every file under the home (a file missing
 * on the other side is diffed against nothing), ~/.aws/credentials included — like `grep -r "" ~`, which
 * the floor asks about. Both are known read-only commands, so smart mode would run them without a card:
 * the floor must ask. Under a confined policy the sandbox hides the stores, so no card.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { securityFloor } from "../../src/gate/inspectors/security-floor.ts";

const root = realpathSync(mkdtempSync(path.join(tmpdir(), "airlock-recdiff-")));
const home = path.join(root, "home");
const ws = path.join(root, "ws");
mkdirSync(path.join(home, ".aws"), { recursive: true });
writeFileSync(path.join(home, ".aws", "credentials"), "[default]\naws_secret_access_key=x\n");
mkdirSync(path.join(ws, "a"), { recursive: true });
mkdirSync(path.join(ws, "b"), { recursive: true });
afterAll(() => rmSync(root, { recursive: true, force: true }));

const judge = (command: string, policy: "danger-full-access" | "workspace-write") =>
  securityFloor({ name: "developer__shell" }, { command }, { workspace: ws, policy, home, PATH: "/usr/bin:/bin" });

describe("recursive diffs of a folder holding a credential store ask under danger-full-access", () => {
  test.each(["diff -rN ~ empty", "diff -r ~ empty", "diff --recursive --new-file ~ empty", `diff -ruN ${home} empty`, "git diff --no-index ~ empty", `git --no-pager diff --no-index --stat ${root} empty`])("%s asks", (command) => {
    expect(judge(command, "danger-full-access")).toMatchObject({ kind: "ask", inspector: "sensitive_ops" });
  });

  test("diffs of workspace folders, and any diff under a confined policy, are allowed", () => {
    for (const command of ["diff -r a b", "git diff --no-index a b"]) expect(judge(command, "danger-full-access")).toEqual({ kind: "allow", inspector: "sensitive_ops" });
    expect(judge("diff -rN ~ empty", "workspace-write")).toEqual({ kind: "allow", inspector: "sensitive_ops" });
    expect(judge("diff -rN ~ empty", "danger-full-access")).toMatchObject({ kind: "ask" });
  });
});
