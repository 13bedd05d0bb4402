/**
 * Path rules skip their glob test when the call's path is not under the glob's literal prefix
 * (match.ts `literalPrefix`): the prefixes found, and that the shortcut never changes an answer — every
 * glob/path pair judged with the shortcut and without it (the plain picomatch test) agrees.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { compilePath, literalPrefix, pathAllows, pathHits, pathView } from "./match.ts";
import type { PathPattern } from "./parse.ts";

let ws: string;
beforeAll(() => {
  ws = realpathSync(mkdtempSync(path.join(tmpdir(), "airlock-rules-prefix-")));
  mkdirSync(path.join(ws, "src", "module7", "deep"), { recursive: true });
  writeFileSync(path.join(ws, "src", "module7", "deep", "a.ts"), "");
  writeFileSync(path.join(ws, ".env"), "");
  mkdirSync(path.join(ws, "secrets0"));
  symlinkSync("secrets0", path.join(ws, "open"));
  symlinkSync("src/module7", path.join(ws, "m7"));
});
afterAll(() => rmSync(ws, { recursive: true, force: true }));

test("the literal prefix of a glob: its leading literal segments, or the whole literal name for a bare name", () => {
  const cases: [PathPattern, string | null][] = [
    [{ anchor: "workspace", glob: "src/module7/**/*.ts" }, "src/module7"],
    [{ anchor: "workspace", glob: "secrets0/**" }, "secrets0"],
    [{ anchor: "workspace", glob: ".env" }, ".env"],
    [{ anchor: "workspace", glob: "**" }, null],
    [{ anchor: "workspace", glob: "**/x" }, null],
    [{ anchor: "workspace", glob: "src/{a,b}/x" }, "src"],
    [{ anchor: "workspace", glob: "../up/x" }, null],
    [{ anchor: "workspace", glob: "!(x)/y" }, null],
    [{ anchor: "absolute", glob: "/etc/ssh/**" }, "/etc/ssh"],
    [{ anchor: "absolute", glob: "/*/x" }, null],
    [{ anchor: "anywhere", glob: ".env" }, ".env"],
    [{ anchor: "anywhere", glob: "*.key" }, null],
    [{ anchor: "anywhere", glob: "id_[rd]sa" }, null],
  ];
  for (const [p, want] of cases) expect([p.glob, literalPrefix(p)]).toEqual([p.glob, want]);
});

test("the shortcut never changes an answer: with and without it, every pattern judges every path alike", () => {
  const globs: PathPattern[] = [
    { anchor: "workspace", glob: "src/module7/**/*.ts" },
    { anchor: "workspace", glob: "src/module7/**" },
    { anchor: "workspace", glob: "src/module7" },
    { anchor: "workspace", glob: "src" },
    { anchor: "workspace", glob: "secrets0/**" },
    { anchor: "workspace", glob: "secrets0" },
    { anchor: "workspace", glob: ".env" },
    { anchor: "workspace", glob: "src/*/deep/**" },
    { anchor: "absolute", glob: `${ws}/secrets0/**` },
    { anchor: "absolute", glob: `${ws}/src` },
    { anchor: "absolute", glob: `${ws}` },
    { anchor: "anywhere", glob: ".env" },
    { anchor: "anywhere", glob: "deep" },
    { anchor: "anywhere", glob: "module7" },
  ];
  const paths = ["src/module7/deep/a.ts", "src/module7", "src/module7x/a.ts", "src", "srcx", ".env", ".envx", "x/.env", "secrets0", "secrets0/k", "secrets01/k", "open/k", "m7/deep/a.ts", "m7", `${ws}/src/module7/deep/a.ts`, "/etc/passwd", ws, "../elsewhere/x"];
  let shortcuts = 0;
  for (const g of globs) {
    const fast = compilePath(g);
    const plain = { ...fast, literal: null };
    if (fast.literal !== null) shortcuts++;
    for (const p of paths) {
      const v = pathView(p, ws);
      expect([g.glob, p, pathHits(fast, v), pathAllows(fast, v)]).toEqual([g.glob, p, pathHits(plain, v), pathAllows(plain, v)]);
    }
  }
  expect(shortcuts).toBe(globs.length);
});
