/**
 * A tree's rules as the rule inspector judges them: the config's permissions joined to the tree's session
 * rules, compiled again after each add and removal, never another tree's; the config's deny and ask
 * still win over a session allow.
 */
import { afterEach, beforeEach, expect, test } from "bun:test";
import { Store } from "../../store/store.ts";
import { SessionRules } from "../../store/session-rules.ts";
import { SessionRuleSets } from "./session.ts";

let store: Store;
beforeEach(async () => {
  store = await Store.open(":memory:");
});
afterEach(() => store.close());

const SHELL = { name: "developer__shell" };
const sh = (command: string) => ({ command });
async function session(parent?: string) {
  return await store.createSession({ workspace: "/tmp", mode: "smart", sandbox: "workspace-write", privacy: "public", headless: false, provider: "scripted", ...(parent ? { parent_session_id: parent } : {}) } as any);
}

test("session rules join the config's for the tree, at every depth, and for no other tree; add and remove recompile", async () => {
  const root = await session();
  const child = await session(root.id);
  const grandchild = await session(child.id);
  const other = await session();
  const rules = new SessionRules(store);
  const sets = new SessionRuleSets(rules);
  const permissions = { allow: ["Bash(npm test:*)"], ask: ["Bash(git push:*)"], deny: ["Bash(git reset:*)"] };
  const judge = async (sid: string, command: string) => (await sets.forSession(permissions, sid)).set.judge(SHELL, sh(command), "/tmp");

  expect(await judge(grandchild.id, "npm test && git status")).toBeNull();
  const r = await rules.add(child.id, "Bash(git:*)", { actor: "test" });
  expect(r.root_session_id).toBe(root.id);
  // a compound command covered by a config allow and a session allow together
  for (const sid of [root.id, child.id, grandchild.id]) expect(await judge(sid, "npm test && git status")).toEqual({ list: "allow", rule: "Bash(npm test:*) + Bash(git:*)" });
  expect((await sets.forSession(permissions, grandchild.id)).session).toEqual(new Set(["Bash(git:*)"]));
  expect(await judge(other.id, "git status")).toBeNull();
  // the config's ask and deny still decide over the session allow
  expect(await judge(child.id, "git push origin main")).toEqual({ list: "ask", rule: "Bash(git push:*)" });
  expect(await judge(child.id, "git reset --hard")).toEqual({ list: "deny", rule: "Bash(git reset:*)" });
  // the same rule twice is stored once
  expect((await rules.add(root.id, "Bash(git:*)")).id).toBe(r.id);
  expect((await rules.list(grandchild.id)).map((x) => x.rule)).toEqual(["Bash(git:*)"]);

  await rules.remove(grandchild.id, r.id);
  expect(await judge(child.id, "git status")).toBeNull();
  await expect(rules.remove(root.id, r.id)).rejects.toThrow(expect.objectContaining({ code: "not_found" }));
  // a different permissions block (another root's run overrides) is compiled for it
  await rules.add(root.id, "Bash(make:*)");
  expect((await sets.forSession({ allow: [], ask: [], deny: ["Bash(make:*)"] }, child.id)).set.judge(SHELL, sh("make"), "/tmp")).toEqual({ list: "deny", rule: "Bash(make:*)" });
  expect(await judge(child.id, "make")).toEqual({ list: "allow", rule: "Bash(make:*)" });
});
