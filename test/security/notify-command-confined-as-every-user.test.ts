/**
 * The compiled binary's headless `airlock run`, as root and as nobody: a run that ends blocked tells its
 * notify commands `run_blocked` before it exits; a command that hangs is killed with its process group at
 * its timeout (logged once, the run's exit code unchanged); and a command sees airlock's tokens as empty
 * files, as a hook does.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { testUsers, type TestUser } from "../as-user.ts";
import { processesWith, waitFor } from "../processes.ts";
import { binaryBox, chownTree, killServes } from "./fixtures/binary-box.ts";

afterAll(killServes);

describe.each(testUsers())("notify commands of a headless airlock run, as $name", (user: TestUser) => {
  test("a blocked run sends run_blocked to its commands, kills a hanging one with its group at its timeout, and hides the tokens", async () => {
    const { dir, bin, dataDir, ws, home } = await binaryBox("airlock-notify-");
    const marker = `${70_000 + user.uid + (process.pid % 1000)}.5`;
    writeFileSync(join(dataDir, "turns.yaml"), `turns:\n  - tool_calls: [{ name: developer__write_file, arguments: { path: "x.txt", content: "x" } }]\n  - text: ""\n`);
    writeFileSync(
      join(dataDir, "airlock.yaml"),
      [
        "provider: { name: scripted, script: turns.yaml }",
        "mode: smart",
        "notify:",
        "  notifiers:",
        "    - name: hangs",
        `      command: 'sleep ${marker} & sleep ${marker}'`,
        "      timeout_s: 2",
        "    - name: records",
        `      command: 'cat > "$AIRLOCK_CONFIG_DIR/event.json"; cat "$AIRLOCK_CONFIG_DIR/api-token" "$AIRLOCK_CONFIG_DIR/approver-token" > "$AIRLOCK_CONFIG_DIR/seen-tokens"'`,
        "",
      ].join("\n"),
    );
    if (user.uid !== (process.getuid?.() ?? -1)) chownTree(dir, user.uid);
    const env = { PATH: "/usr/local/bin:/usr/bin:/bin", HOME: home, LANG: "C.UTF-8" };
    const p = Bun.spawn([...user.prefix, bin, "run", "write x.txt", "--headless", "--output-format", "json", "--data-dir", dataDir], { cwd: ws, env, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
    const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
    expect(code).toBe(3);
    const result = JSON.parse(stdout);
    expect(result.status).toBe("blocked");

    expect(JSON.parse(readFileSync(join(dataDir, "event.json"), "utf8"))).toMatchObject({ event: "run_blocked", session_id: result.session_id, status: "blocked" });
    // the tokens exist (the run created them) but the command saw them empty
    expect(readFileSync(join(dataDir, "api-token"), "utf8").trim().length).toBeGreaterThan(0);
    expect(readFileSync(join(dataDir, "seen-tokens"), "utf8")).toBe("");
    // the hanging command was killed at its timeout, its background child too, and said so once
    expect(stderr.split("\n").filter((l) => l.includes('notify "hangs"'))).toEqual([expect.stringContaining("did not finish within 2 s; it was killed")]);
    await waitFor(() => processesWith(marker).length === 0, "the hanging command's processes to be gone");
  });
});
