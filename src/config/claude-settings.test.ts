import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { AirlockError } from "../errors.ts";
import { claudeSettingsFiles, hookSource, importSettingsHooks, parseSettingsHooks } from "./claude-settings.ts";

const root = mkdtempSync(path.join(tmpdir(), "airlock-claude-settings-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("hooks from Claude Code's settings files", () => {
  test("command hooks become hook groups per event, tagged with their source, with Claude Code's default timeout", () => {
    const { groups, warnings } = parseSettingsHooks(
      "/h/.claude/settings.json",
      {
        hooks: {
          PreToolUse: [{ matcher: "Bash", hooks: [{ type: "command", command: "guard.sh", timeout: 5 }] }],
          Stop: [{ hooks: [{ type: "command", command: "stop.sh" }] }],
        },
      },
      "user-settings",
    );
    expect(warnings).toEqual([]);
    expect(groups.PreToolUse as unknown).toEqual([{ matcher: "Bash", hooks: [{ type: "command", command: "guard.sh", timeout: 5, source: "user-settings" }] }]);
    expect(groups.Stop as unknown).toEqual([{ matcher: "", hooks: [{ type: "command", command: "stop.sh", timeout: 60, source: "user-settings" }] }]);
    expect(hookSource(groups.Stop[0]!.hooks[0]!)).toBe("user-settings");
    expect(hookSource({ type: "command", command: "x", timeout: 1 })).toBe("config");
  });

  test("events airlock does not fire, other hook types and unknown fields are warnings naming file, event and field — never dropped silently", () => {
    const file = "/ws/.claude/settings.json";
    const { groups, warnings } = parseSettingsHooks(
      file,
      {
        disableAllHooks: false,
        hooks: {
          PermissionRequest: [{ hooks: [{ type: "command", command: "a.sh" }] }],
          PostToolUseFailure: [{ matcher: "Bash", hooks: [{ type: "command", command: "b.sh" }, { type: "command", command: "c.sh" }] }],
          SubagentStart: [],
          MadeUpEvent: [],
          PreToolUse: [
            {
              matcher: "Edit|Write",
              description: "x",
              hooks: [
                { type: "prompt", prompt: "is this ok?" },
                { type: "agent", prompt: "check" },
                { type: "http", url: "http://127.0.0.1/hook" },
                { type: "command", command: "fmt.sh", async: true, statusMessage: "formatting" },
              ],
            },
          ],
        },
      },
      "project-settings",
    );
    expect(groups.PreToolUse as unknown).toEqual([{ matcher: "Edit|Write", hooks: [{ type: "command", command: "fmt.sh", timeout: 60, source: "project-settings" }] }]);
    expect(warnings).toEqual([
      `${file}: disableAllHooks is not honoured (airlock runs the hooks it imports; turn hooks.import_claude_settings off instead)`,
      expect.stringMatching(/^\/ws\/\.claude\/settings\.json: hooks\.PermissionRequest: airlock does not fire the PermissionRequest event; its 1 hook\(s\) are not run/),
      expect.stringMatching(/: hooks\.PostToolUseFailure: airlock does not fire the PostToolUseFailure event; its 2 hook\(s\) are not run/),
      expect.stringMatching(/: hooks\.SubagentStart: airlock does not fire the SubagentStart event; its 0 hook/),
      expect.stringMatching(/: hooks\.MadeUpEvent: airlock does not fire the MadeUpEvent event/),
      `${file}: hooks.PreToolUse[0].description: not a field airlock knows; ignored`,
      `${file}: hooks.PreToolUse[0].hooks[0].type: hooks of type "prompt" are not run (airlock runs only type "command")`,
      `${file}: hooks.PreToolUse[0].hooks[1].type: hooks of type "agent" are not run (airlock runs only type "command")`,
      `${file}: hooks.PreToolUse[0].hooks[2].type: hooks of type "http" are not run (airlock runs only type "command")`,
      `${file}: hooks.PreToolUse[0].hooks[3].async: not honoured by airlock; the hook runs without it (synchronously, its answer awaited)`,
      `${file}: hooks.PreToolUse[0].hooks[3].statusMessage: not honoured by airlock; the hook runs without it`,
    ]);
  });

  test.each([
    [{ hooks: [] }, "hooks: expected an object of events"],
    [{ hooks: { PreToolUse: {} } }, "hooks.PreToolUse: expected a list of matcher groups"],
    [{ hooks: { PreToolUse: [{ matcher: "Bash" }] } }, "hooks.PreToolUse[0].hooks: expected a list of hooks"],
    [{ hooks: { PreToolUse: [{ matcher: 3, hooks: [] }] } }, "hooks.PreToolUse[0].matcher: expected a string"],
    [{ hooks: { Stop: [{ hooks: [{ type: "command" }] }] } }, "hooks.Stop[0].hooks[0].command: expected a non-empty string"],
    [{ hooks: { Stop: [{ hooks: [{ type: "command", command: "x", timeout: "10" }] }] } }, "hooks.Stop[0].hooks[0].timeout: expected a positive number of seconds"],
  ])("a malformed hook airlock would run stops start-up (config_invalid), never skipped: %j", (settings, why) => {
    let err: unknown;
    try {
      parseSettingsHooks("/h/.claude/settings.json", settings, "user-settings");
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(AirlockError);
    expect((err as AirlockError).code).toBe("config_invalid");
    expect((err as AirlockError).message).toContain(`/h/.claude/settings.json: ${why}`);
  });

  test("the files are read in Claude Code's order, missing ones skipped, each command tagged by its file's scope", () => {
    const home = path.join(root, "home");
    const ws = path.join(root, "ws");
    mkdirSync(path.join(home, ".claude"), { recursive: true });
    mkdirSync(path.join(ws, ".claude"), { recursive: true });
    writeFileSync(path.join(home, ".claude", "settings.json"), JSON.stringify({ hooks: { PreToolUse: [{ hooks: [{ type: "command", command: "user.sh" }] }] } }));
    writeFileSync(path.join(ws, ".claude", "settings.local.json"), JSON.stringify({ hooks: { PreToolUse: [{ hooks: [{ type: "command", command: "local.sh" }] }] } }));
    const got = importSettingsHooks(claudeSettingsFiles(home, ws));
    expect(got.read).toEqual([path.join(home, ".claude", "settings.json"), path.join(ws, ".claude", "settings.local.json")]);
    expect(got.groups.PreToolUse.flatMap((g) => g.hooks.map((h) => [h.command, hookSource(h)]))).toEqual([
      ["user.sh", "user-settings"],
      ["local.sh", "project-settings"],
    ]);
    writeFileSync(path.join(ws, ".claude", "settings.json"), "{ not json");
    expect(() => importSettingsHooks(claudeSettingsFiles(home, ws))).toThrow(/settings\.json: not JSON/);
  });
});
