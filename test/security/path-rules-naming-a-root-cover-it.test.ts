/**
 * @module test/security/path-rules-naming-a-root-cover-it
 * A path rule naming the workspace itself (`Edit(/)`, `Read(./)`, `Read(.)`) or the file system's root
 * (`Edit(//)`) names a folder, and a folder covers its subtree: as a deny it must refuse every file tool
 * call under it. It used to compile to a pattern no path matches (`.`, `/`, the empty glob), so the deny
 * a person wrote to forbid every edit refused nothing. Likewise a pattern with `..` (`Read(./src/../.env)`)
 * never matches a resolved path: it is refused at start, not silently dead.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { compileRules, parseRule } from "../../src/gate/rules/index.ts";

let ws: string;
beforeAll(() => {
  ws = realpathSync(mkdtempSync(join(tmpdir(), "airlock-root-rules-")));
});
afterAll(() => rmSync(ws, { recursive: true, force: true }));

const WRITE = { name: "developer__write_file" };
const READ = { name: "developer__read_file" };

describe("a deny rule naming a root covers everything under it", () => {
  test.each(["Edit(/)", "Edit(./)", "Edit(.)", "Edit(//)", "Edit(///)"])("%s in deny refuses writes in the workspace", (rule) => {
    const rs = compileRules({ allow: ["Edit"], ask: [], deny: [rule] }, { home: "/root" });
    for (const p of ["x.txt", "src/deep/y.ts"]) expect(rs.judge(WRITE, { path: p }, ws)).toEqual({ list: "deny", rule });
  });

  test("Read(//) in deny refuses a read anywhere; Read(./) does not reach outside the workspace", () => {
    const abs = compileRules({ allow: ["Read"], ask: [], deny: ["Read(//)"] }, { home: "/root" });
    expect(abs.judge(READ, { path: "/etc/hostname" }, ws)).toEqual({ list: "deny", rule: "Read(//)" });
    const rel = compileRules({ allow: ["Read"], ask: [], deny: ["Read(./)"] }, { home: "/root" });
    expect(rel.judge(READ, { path: "a.txt" }, ws)).toEqual({ list: "deny", rule: "Read(./)" });
    expect(rel.judge(READ, { path: "/etc/hostname" }, ws)).toEqual({ list: "allow", rule: "Read" });
  });
});

describe("a path pattern with .. is refused, never silently dead", () => {
  test.each(["Read(./src/../.env)", "Read(/src/../.env)", "Read(//tmp/x/../y)", "Read(~/a/../.ssh)"])("%s does not parse", (rule) => {
    expect(parseRule(rule, { home: "/root" }).ok).toBe(false);
  });
});
