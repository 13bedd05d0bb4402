/**
 * @module test/security/rules-judge-the-floors-real-path
 * The security floor and the permission rules judge the SAME real path of a file call: one judgement
 * resolves the call's path once (gate/inspectors/floor-paths.ts `judgementPaths`) and both inspectors
 * read it, so a symlink swapped between the floor's look and the rules' look cannot make them judge two
 * different files. The memo lives for one judgement only: the next call (a new call object) resolves
 * the path afresh and sees the link's new target.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Config } from "../../src/config/schema.ts";
import { floorInspector, rulesInspector, type InspectedCall } from "../../src/gate/inspectors/index.ts";
import type { Session } from "../../src/session/types.ts";
import { treeRulesInspector } from "../../src/gate/inspectors/rules.ts";
import { SessionRuleSets } from "../../src/gate/rules/session.ts";
import { SessionRules } from "../../src/store/session-rules.ts";
import { Store } from "../../src/store/store.ts";
import type { ToolDef } from "../../src/tool/tool.ts";

let ws: string;
beforeAll(() => {
  ws = realpathSync(mkdtempSync(join(tmpdir(), "airlock-rules-floor-path-")));
  mkdirSync(join(ws, "secret"));
  writeFileSync(join(ws, "secret", "k"), "key");
  mkdirSync(join(ws, "pub"));
  writeFileSync(join(ws, "pub", "ok"), "ok");
  symlinkSync("secret/k", join(ws, "l"));
});
afterAll(() => rmSync(ws, { recursive: true, force: true }));

const config = Config.parse({ mode: "autonomous", permissions: { deny: ["Read(./secret/**)"] } });
const READ = { name: "developer__read_file" } as ToolDef;

/** A fresh call object, as the gate builds one for every judgement. */
function judgement(p: string): InspectedCall {
  return {
    def: READ,
    args: { path: p },
    rawArgs: { path: p },
    callId: "c",
    session: { id: "s", workspace: ws } as Session,
    config,
    policy: "workspace-write",
    signal: new AbortController().signal,
  };
}

test("a link swapped after the floor looked is still judged by the rules at the target the floor saw; the next call sees the new target", async () => {
  const floor = floorInspector({});
  const first = judgement("l");
  expect(await floor.inspect(first)).toEqual([{ kind: "allow", inspector: "sensitive_ops" }]);
  // the link now points at a harmless file, between the floor's look and the rules'
  unlinkSync(join(ws, "l"));
  symlinkSync("pub/ok", join(ws, "l"));
  const verdicts = await rulesInspector.inspect(first);
  expect(verdicts.map((v) => v.kind)).toEqual(["deny"]);
  expect(verdicts[0]!.rule).toBe("Read(./secret/**)");

  // a new judgement: resolved afresh, the link's new target is not denied
  const second = judgement("l");
  expect(await floor.inspect(second)).toEqual([{ kind: "allow", inspector: "sensitive_ops" }]);
  expect(await rulesInspector.inspect(second)).toEqual([]);

  // and back: a link to the denied folder is denied again on a fresh judgement
  unlinkSync(join(ws, "l"));
  symlinkSync("secret/k", join(ws, "l"));
  const third = judgement("l");
  await floor.inspect(third);
  expect((await rulesInspector.inspect(third)).map((v) => v.kind)).toEqual(["deny"]);
});

test("the runtime's rule inspector (with the tree's session rules) reads the same real path as the floor", async () => {
  const store = await Store.open(":memory:");
  try {
    const session = await store.createSession({ workspace: ws, mode: "autonomous", sandbox: "workspace-write", privacy: "public", headless: false, provider: "scripted" });
    const inspector = treeRulesInspector(new SessionRuleSets(new SessionRules(store)));
    const floor = floorInspector({});
    unlinkSync(join(ws, "l"));
    symlinkSync("secret/k", join(ws, "l"));
    const call = { ...judgement("l"), session };
    expect(await floor.inspect(call)).toEqual([{ kind: "allow", inspector: "sensitive_ops" }]);
    unlinkSync(join(ws, "l"));
    symlinkSync("pub/ok", join(ws, "l"));
    expect((await inspector.inspect(call)).map((v) => [v.kind, v.rule])).toEqual([["deny", "Read(./secret/**)"]]);
  } finally {
    store.close();
  }
});
