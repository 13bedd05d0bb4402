/**
 * @module test/security/file-tools-write-swapped-parent
 * `developer__write_file` checks the real path, then opens it with `O_CREAT`. If a folder on the way is
 * swapped for a symlink in between (a concurrent shell call in the workspace flipping `sub` ↔ a link to
 * `/etc`), the open follows the new link: the check after the open refused the write, but the file had
 * already been CREATED outside the workspace, as airlock's user (root in a container: an empty
 * `/etc/nologin` locks users out). The write now creates exclusively and removes a file it made at a path
 * that moved. The swapped state is set up before `openChecked` runs (deterministic), as root and as nobody.
 */
import { describe, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdirSync, symlinkSync } from "node:fs";
import path from "node:path";
import { sharedTempDir, testUsers } from "../as-user.ts";

const FILES = path.join(import.meta.dir, "../../src/tool/files.ts");

for (const user of testUsers()) {
  describe(`as ${user.name}`, () => {
    test("a write whose folder became a link after the check is refused and leaves no file where the link leads", () => {
      const base = sharedTempDir("airlock-write-swap-");
      const ws = path.join(base, "ws");
      const outside = path.join(base, "outside");
      for (const d of [ws, outside]) {
        mkdirSync(d);
        chmodSync(d, 0o777);
      }
      // checked: ws/sub/nologin (sub a real folder then); now sub leads outside
      symlinkSync(outside, path.join(ws, "sub"));
      const code = `
        const { openChecked } = await import(${JSON.stringify(FILES)});
        try {
          const fh = await openChecked(${JSON.stringify(path.join(ws, "sub", "nologin"))}, "sub/nologin", "file", true);
          await fh.close();
          console.log("opened");
        } catch (e) {
          console.log(e.code);
        }`;
      const r = Bun.spawnSync([...user.prefix, process.execPath, "-e", code], { stderr: "pipe" });
      expect({ out: r.stdout.toString().trim(), err: r.stderr.toString() }).toEqual({ out: "not_regular_file", err: "" });
      expect(existsSync(path.join(outside, "nologin"))).toBe(false);
    });
  });
}
