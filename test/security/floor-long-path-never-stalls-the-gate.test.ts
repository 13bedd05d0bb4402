/**
 * The security floor's repository-metadata rule (gate/inspectors/repo-metadata.ts) walks every folder from a
 * file tool's target up to the workspace. It took each folder with `path.dirname` and split the rest of the
 * path to find the name below it, both copying the whole path: quadratic in its length. A model-chosen path
 * of 1 MB (500,000 components, `d/d/d/…/f.txt`) held the gate — every call of the session waiting behind it —
 * for 105 s of CPU (100 KB: 36 s), before any card or refusal. A real `airlock run --headless` with the scripted model.
 */
import { afterAll, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const MAIN = join(import.meta.dir, "..", "..", "src", "main.ts");
const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

test("a 1 MB path of a write_file call is judged in seconds, not minutes", async () => {
  const dir = mkdtempSync(join(tmpdir(), "airlock-floor-long-path-"));
  dirs.push(dir);
  const ws = join(dir, "ws");
  mkdirSync(ws);
  const args = { path: `${"d/".repeat(500_000)}f.txt`, content: "x" };
  writeFileSync(join(dir, "turns.yaml"), `turns:\n  - tool_calls: [{ name: developer__write_file, arguments: ${JSON.stringify(args)} }]\n  - text: done\n`);
  writeFileSync(join(dir, "airlock.yaml"), "provider: { name: scripted, script: turns.yaml }\nmode: approve\nsandbox: read-only\n");
  const started = Date.now();
  const p = Bun.spawn([process.execPath, MAIN, "run", "--headless", "--data-dir", dir, "--workspace", ws, "go"], { cwd: ws, stdout: "pipe", stderr: "pipe", env: { ...process.env, AIRLOCK_HOME: "" } });
  const timer = setTimeout(() => p.kill("SIGKILL"), 30_000);
  const [out, code] = await Promise.all([new Response(p.stdout).text(), p.exited]);
  clearTimeout(timer);
  expect(Date.now() - started).toBeLessThan(30_000);
  expect(code).toBe(0); // the model answers after the refusal
  expect(out).toBe("done\n");
});
