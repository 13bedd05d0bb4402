/**
 * @module scripts/bench/git-meta-scan
 * Cost of the launcher's repository-metadata scan (src/launcher/git-meta.ts) on a workspace of
 * ~20k files in ~2k folders (a node_modules-like tree with a few nested repositories): the first
 * scan of a root, later scans with nothing changed, and a later scan after one new `.git`.
 * Prints JSON: milliseconds (median of `runs`), and the longest the event loop waited meanwhile
 * (`max_event_loop_gap_ms`: a 1 ms timer's largest gap over all scans; the scan yields every 5 ms).
 * Usage: bun scripts/bench/git-meta-scan.ts [dirs=2000] [filesPerDir=10] [runs=15]
 */
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { clearGitMetaCache, quarantineNewGitMeta, scanGitMeta } from "../../src/launcher/git-meta.ts";

const [dirs = 2000, files = 10, runs = 15] = process.argv.slice(2).map(Number);
const root = realpathSync(mkdtempSync(path.join(tmpdir(), "airlock-bench-gitmeta-")));
try {
  let made = 0;
  const all: string[] = [];
  // ~45 packages of ~45 folders each, 3 levels deep
  for (let p = 0; made < dirs; p++) {
    for (let a = 0; a < 5 && made < dirs; a++) {
      for (let b = 0; b < 9 && made < dirs; b++) {
        const d = path.join(root, "node_modules", `pkg${p}`, `lib${a}`, `sub${b}`);
        mkdirSync(d, { recursive: true });
        all.push(d);
        made++;
        for (let f = 0; f < files; f++) writeFileSync(path.join(d, `f${f}.js`), "");
      }
    }
  }
  for (const i of [0, 500, 1500]) mkdirSync(path.join(all[i]!, ".git", "hooks"), { recursive: true });
  const median = (xs: number[]) => xs.sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;
  const time = async (f: () => Promise<unknown>) => {
    const t = performance.now();
    await f();
    return performance.now() - t;
  };
  let last = performance.now();
  let gap = 0;
  const tick = setInterval(() => {
    const now = performance.now();
    gap = Math.max(gap, now - last);
    last = now;
  }, 1);
  const first: number[] = [];
  for (let i = 0; i < runs; i++) {
    clearGitMetaCache();
    first.push(await time(() => scanGitMeta(root)));
  }
  await Bun.sleep(2100); // past the "ctime too recent to trust" window, as between real calls
  await scanGitMeta(root);
  const later: number[] = [];
  for (let i = 0; i < runs; i++) later.push(await time(() => scanGitMeta(root)));
  const before = await scanGitMeta(root);
  mkdirSync(path.join(all[1000]!, ".git"));
  const afterNew = await time(() => quarantineNewGitMeta(root, before));
  clearInterval(tick);
  console.log(JSON.stringify({ max_event_loop_gap_ms: +gap.toFixed(2), dirs: made, files: made * files, first_scan_ms: +median(first).toFixed(2), later_scan_ms: +median(later).toFixed(2), scan_and_quarantine_one_new_ms: +afterNew.toFixed(2) }));
} finally {
  rmSync(root, { recursive: true, force: true });
}
