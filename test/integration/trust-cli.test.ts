/**
 * @module test/integration/trust-cli
 * `airlock trust` and the hooks of Claude Code's settings files, as a user meets them: `bun src/main.ts`
 * as real subprocesses, HOME a temp folder (its `~/.claude/settings.json`), real hooks. A workspace's own
 * hooks run only once the folder is trusted, and stop again after `--revoke`; a headless `airlock run`
 * says on stderr and in its result which file's hooks it did not run and how to trust the folder; the
 * user's own settings hooks run without any trust; events airlock does not fire are a start-up warning.
 */
import { describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { airlockWith, settingsHooksBase, type Ran } from "../settings-hooks-cli.ts";


const { base, home, dataDir } = settingsHooksBase("airlock-trust-cli-");
const data = dataDir("data");

const airlock = (args: string[]): Promise<Ran> => airlockWith(home, data, args);

/** A project folder whose `.claude/settings.json` has a PreToolUse hook that leaves `project-hook-ran` behind. */
function project(name: string): string {
  const dir = join(base, name);
  mkdirSync(join(dir, ".claude"), { recursive: true });
  writeFileSync(
    join(dir, ".claude", "settings.json"),
    JSON.stringify({ hooks: { PreToolUse: [{ matcher: "Bash", hooks: [{ type: "command", command: 'touch "$AIRLOCK_PROJECT_DIR/project-hook-ran"' }] }] } }),
  );
  return dir;
}

/** `airlock run --headless --output-format json` in `ws`; whether the project hook ran (its mark removed after). */
async function runIn(ws: string): Promise<{ ran: boolean; result: { status: string; warnings?: string[] }; stderr: string }> {
  const r = await airlock(["run", "go", "--headless", "--output-format", "json", "--workspace", ws]);
  expect({ code: r.code, stderr: r.stderr }).toMatchObject({ code: 0 });
  const mark = join(ws, "project-hook-ran");
  const ran = existsSync(mark);
  if (ran) unlinkSync(mark);
  return { ran, result: JSON.parse(r.stdout), stderr: r.stderr };
}

describe("airlock trust", () => {
  test("trust stores the real path, --list shows it, --revoke removes it; errors name the fix", async () => {
    const real = project("listed");
    symlinkSync(real, join(base, "listed-link"));
    const added = await airlock(["trust", join(base, "listed-link")]);
    expect(added.code).toBe(0);
    expect(added.stdout).toContain(`trusted: ${real} (and every folder under it)`);
    expect((await airlock(["trust", real])).stdout).toContain(`already trusted: ${real}`);
    const listed = await airlock(["trust", "--list", "--json"]);
    expect(JSON.parse(listed.stdout)).toEqual({ trusted_folders: [{ path: real, added_at: expect.any(String) }] });
    expect((await airlock(["trust", "--list"])).stdout).toContain(real);

    const missing = await airlock(["trust", join(base, "no-such-folder")]);
    expect(missing).toMatchObject({ code: 2, stdout: "" });
    expect(missing.stderr).toContain("airlock: usage: ");
    const none = await airlock(["trust"]);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain("--list or --revoke DIR");
    const notListed = await airlock(["trust", "--revoke", base]);
    expect(notListed.code).toBe(1);
    expect(notListed.stderr).toContain(`airlock: not_found: ${base} is not a trusted folder`);

    const revoked = await airlock(["trust", "--revoke", join(base, "listed-link")]);
    expect(revoked).toMatchObject({ code: 0, stdout: expect.stringContaining(`no longer trusted: ${real}`) });
    expect(JSON.parse((await airlock(["trust", "--list", "--json"])).stdout)).toEqual({ trusted_folders: [] });
  }, 120_000);

  test("a workspace's hooks are skipped (and the headless run says so) until the folder is trusted, run under a trusted folder, and stop after --revoke", async () => {
    const ws = project("proj");
    const settings = join(ws, ".claude", "settings.json");

    const before = await runIn(ws);
    expect(before.ran).toBe(false);
    expect(before.result.status).toBe("completed");
    expect(before.result.warnings).toEqual([expect.stringContaining(`${settings}: its hooks are NOT run: ${ws} is not a trusted folder`)]);
    expect(before.result.warnings![0]).toContain(`airlock trust ${ws}`);
    expect(before.stderr).toContain(`airlock: WARNING: ${settings}: its hooks are NOT run`);
    expect(before.stderr).toContain(`If you trust it, run: airlock trust ${ws}`);

    expect((await airlock(["trust", ws])).code).toBe(0);
    const trusted = await runIn(ws);
    expect(trusted.ran).toBe(true);
    expect(trusted.result.warnings).toBeUndefined();
    expect(trusted.stderr).not.toContain("NOT run");

    // a workspace inside a trusted folder is trusted
    const nested = project("proj/packages/api");
    expect((await runIn(nested)).ran).toBe(true);

    expect((await airlock(["trust", "--revoke", ws])).code).toBe(0);
    const after = await runIn(ws);
    expect(after.ran).toBe(false);
    expect(after.result.warnings).toEqual([expect.stringContaining("is not a trusted folder")]);
    expect((await runIn(nested)).ran).toBe(false);
  }, 180_000);

  test("the user's ~/.claude/settings.json hooks run in any folder, and an event airlock does not fire is a start-up warning", async () => {
    const ws = join(base, "plain");
    mkdirSync(ws);
    const userSettings = join(home, ".claude", "settings.json");
    writeFileSync(
      userSettings,
      JSON.stringify({
        hooks: {
          PreToolUse: [{ matcher: "Bash", hooks: [{ type: "command", command: 'touch "$AIRLOCK_PROJECT_DIR/project-hook-ran"' }] }],
          PermissionRequest: [{ hooks: [{ type: "command", command: "true" }] }],
        },
      }),
    );
    try {
      const r = await runIn(ws);
      expect(r.ran).toBe(true);
      expect(r.result.warnings).toBeUndefined();
      expect(r.stderr).toContain(`airlock: WARNING: ${userSettings}: hooks.PermissionRequest: airlock does not fire the PermissionRequest event; its 1 hook(s) are not run`);
    } finally {
      rmSync(userSettings);
    }
  }, 120_000);
});
