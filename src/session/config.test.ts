import { expect, test } from "bun:test";
import { Config } from "../config/schema.ts";
import { noHookGroups } from "../config/claude-settings.ts";
import { SessionConfigs, type HookImporter } from "./config.ts";
import type { Session } from "./types.ts";

const session = (id: string, parent: string | null = null): Session =>
  ({ id, parent_session_id: parent, workspace: "/ws", mode: "smart", sandbox: "workspace-write" }) as unknown as Session;
const store = { parentOf: (id: string) => (id === "child" ? "root" : id === "root" ? null : undefined), knownParentOf: (id: string) => (id === "child" ? "root" : id === "root" ? null : undefined) };
const cmd = (command: string) => ({ type: "command" as const, command, timeout: 60 });

test("a tree's imported hooks run after the config's own and the run overrides', per event; the import reads the root's config with its overrides", async () => {
  const calls: boolean[] = [];
  const importer: HookImporter = (_root, config) => {
    calls.push(config.hooks.import_claude_settings);
    const groups = noHookGroups();
    groups.PreToolUse.push({ matcher: "", hooks: [{ ...cmd("imported.sh"), source: "project-settings" } as Awaited<ReturnType<typeof cmd>>] });
    return { groups, notes: ["a note"] };
  };
  const base = Config.parse({ hooks: { PreToolUse: [{ hooks: [cmd("config.sh")] }] } });
  const configs = new SessionConfigs(store, base, importer);
  // import off: nothing imported, no notes
  expect(configs.configFor(session("root")).hooks.PreToolUse.flatMap((g) => g.hooks.map((h) => h.command))).toEqual(["config.sh"]);
  expect(await configs.hookNotes("root")).toEqual([]);
  expect(calls).toEqual([]);
  // a recipe turns it on for its tree: config, recipe, then imported — for the root and its children
  configs.set("root", { hooks: { import_claude_settings: true, PreToolUse: [{ hooks: [cmd("recipe.sh")] }] } });
  expect(configs.configFor(session("child", "root")).hooks.PreToolUse.flatMap((g) => g.hooks.map((h) => h.command))).toEqual(["config.sh", "recipe.sh", "imported.sh"]);
  expect(await configs.hookNotes("root")).toEqual(["a note"]);
  expect(calls).toEqual([true]); // once per tree
  configs.clear("root");
  expect(configs.configFor(session("root")).hooks.PreToolUse).toHaveLength(1);
});

test("an import that fails is a note, and the tree's config keeps failing (fail closed) until it succeeds", async () => {
  let fail = true;
  const configs = new SessionConfigs(store, Config.parse({ hooks: { import_claude_settings: true } }), () => {
    if (fail) throw new Error("settings.json: not JSON");
    return { groups: noHookGroups(), notes: [] };
  });
  expect(await configs.hookNotes("root")).toEqual(["settings.json: not JSON (every tool call of this session is refused until it is fixed)"]);
  expect(() => configs.configFor(session("root"))).toThrow("not JSON");
  fail = false;
  expect(configs.configFor(session("root")).hooks.import_claude_settings).toBe(true);
});

test("mayHaveHooks answers from memory: false only when the known tree's config and its made import hold none for the event", () => {
  const imported: string[] = [];
  const importer: HookImporter = (root) => {
    imported.push(root);
    const groups = noHookGroups();
    groups.Notification.push({ matcher: "", hooks: [{ ...cmd("imported-notify.sh"), source: "project-settings" } as Awaited<ReturnType<typeof cmd>>] });
    return { groups, notes: [] };
  };
  const configs = new SessionConfigs(store, Config.parse({ hooks: { PreToolUse: [{ hooks: [cmd("config.sh")] }] } }), importer);
  // no Notification hook anywhere: no for the root and its child; another event's hooks do not count
  expect(configs.mayHaveHooks("root", "Notification")).toBe(false);
  expect(configs.mayHaveHooks("child", "Notification")).toBe(false);
  expect(configs.mayHaveHooks("child", "PreToolUse")).toBe(true);
  // a session whose chain is not known in this process: cannot tell, so maybe
  expect(configs.mayHaveHooks("stranger", "Notification")).toBe(true);
  // run overrides of the root add one: its whole tree may
  configs.set("root", { hooks: { Notification: [{ hooks: [cmd("recipe-notify.sh")] }] } });
  expect(configs.mayHaveHooks("child", "Notification")).toBe(true);
  // an import turned on but not made yet: maybe (nothing is read to tell) …
  configs.set("root", { hooks: { import_claude_settings: true } });
  expect(configs.mayHaveHooks("child", "Notification")).toBe(true);
  expect(imported).toEqual([]);
  // … and once made, what it added counts
  expect(configs.configFor(session("child", "root")).hooks.Notification).toHaveLength(1);
  expect(configs.mayHaveHooks("child", "Notification")).toBe(true);
  expect(configs.mayHaveHooks("child", "Stop")).toBe(false);
});
