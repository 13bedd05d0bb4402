/**
 * @module test/security/data-dir-transcripts-of-another-user-refused
 * The data dir's `transcripts/` folder (every session's messages, handed to hooks as `transcript_path`) put there by
 * another user while the data dir was open to them stays theirs after `chmod go-w DIR`: airlock running as root
 * tightened its mode but its owner may change it back, and rename or replace the transcripts in it that hooks read.
 * It is refused (`data_dir_unusable`) as the database of another user is. Planting it needs root: root only.
 */
import { describe, expect, test } from "bun:test";
import { chmodSync, chownSync, mkdirSync, mkdtempSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { removeAfterAllTests } from "../cleanup.ts";
import { IS_ROOT, NOBODY } from "../as-user.ts";

const MAIN = join(import.meta.dir, "..", "..", "src", "main.ts");

async function run(data: string, ws: string, home: string): Promise<{ code: number; stderr: string }> {
  const proc = Bun.spawn(["timeout", "-s", "KILL", "60", process.execPath, MAIN, "run", "hi", "--headless", "--data-dir", data, "--workspace", ws], {
    cwd: ws,
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: home, AIRLOCK_HOME: "" },
  });
  const [stderr, code] = await Promise.all([new Response(proc.stderr).text(), proc.exited]);
  return { code, stderr };
}

function place(): { data: string; ws: string; base: string } {
  const base = mkdtempSync(join(tmpdir(), "airlock-foreign-transcripts-"));
  removeAfterAllTests(base);
  const data = join(base, "data");
  const ws = join(base, "ws");
  mkdirSync(data, { mode: 0o700 });
  mkdirSync(ws);
  writeFileSync(join(data, "airlock.yaml"), "provider:\n  name: scripted\n  script: turns.yaml\n");
  writeFileSync(join(data, "turns.yaml"), "turns:\n  - text: done\n");
  return { data, ws, base };
}

describe.skipIf(!IS_ROOT)("a transcripts folder of another user in root's data dir", () => {
  test(`of uid ${NOBODY} (mode 0777): \`airlock run\` exits 2 data_dir_unusable, the folder left as it was`, async () => {
    const { data, ws, base } = place();
    mkdirSync(join(data, "transcripts"));
    chownSync(join(data, "transcripts"), NOBODY, NOBODY);
    chmodSync(join(data, "transcripts"), 0o777);
    const r = await run(data, ws, base);
    expect(r.stderr).toContain("data_dir_unusable");
    expect(r.stderr).toContain(`belongs to uid ${NOBODY}`);
    expect(r.code).toBe(2);
  });
  test("root's own: the run completes", async () => {
    const { data, ws, base } = place();
    const r = await run(data, ws, base);
    expect(r.code, r.stderr).toBe(0);
    expect(statSync(join(data, "transcripts")).uid).toBe(0);
  });
});
