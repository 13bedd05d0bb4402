/**
 * Path rules skip their glob test when the call's path is not under the glob's literal prefix
 * (match.ts `literalPrefix`), and a rule set tries only the path rules indexed under the path's folders
 * (index.ts `Bucket`): the prefixes found, and that neither shortcut changes an answer — every glob/path
 * pair judged with the shortcut and without it (the plain picomatch test) agrees, and a rule set decides
 * by the first rule in list order that matches, as trying every rule in turn would.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { compileRules } from "./index.ts";
import { compilePath, literalPrefix, pathAllows, pathHits, pathView } from "./match.ts";
import { parseRule, type PathPattern } from "./parse.ts";

let ws: string;
/** A symlink to the workspace: the path as written and its real path are then relative to two different folders. */
let wsLink: string;
beforeAll(() => {
  ws = realpathSync(mkdtempSync(path.join(tmpdir(), "airlock-rules-prefix-")));
  wsLink = `${ws}-link`;
  symlinkSync(ws, wsLink);
  mkdirSync(path.join(ws, "src", "module7", "deep"), { recursive: true });
  writeFileSync(path.join(ws, "src", "module7", "deep", "a.ts"), "");
  writeFileSync(path.join(ws, ".env"), "");
  mkdirSync(path.join(ws, "secrets0"));
  symlinkSync("secrets0", path.join(ws, "open"));
  symlinkSync("src/module7", path.join(ws, "m7"));
});
afterAll(() => {
  rmSync(ws, { recursive: true, force: true });
  rmSync(wsLink, { force: true });
});

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

test("an indexed rule set decides by the first matching rule in list order, as trying every rule would", () => {
  const HOME = "/home/prefix-test-user";
  const texts = [
    "Read(./src/module7/**)",
    "Read(src/*/deep/**)",
    "Read(.env)",
    "Read(**/a.ts)",
    "Read(./secrets0/**)",
    `Read(/${ws}/src/**)`,
    "Read(deep)",
    "Read(./src)",
    "Read(~/x/**)",
    "Read(./**)",
  ];
  const paths = ["src/module7/deep/a.ts", "src/module7", "src", ".env", "x/.env", "secrets0/k", "open/k", "m7/deep/a.ts", "m7", `${ws}/src/module7/deep/a.ts`, "/etc/passwd", ws, "../elsewhere/x", "other"];
  // every rotation of the list, so each rule is first somewhere
  for (let k = 0; k < texts.length; k++) {
    const list = [...texts.slice(k), ...texts.slice(0, k)];
    for (const which of ["deny", "allow"] as const) {
      const rs = compileRules({ allow: [], ask: [], deny: [], [which]: list }, { home: HOME });
      const matchers = list.map((t) => {
        const p = parseRule(t, { home: HOME });
        if (!p.ok || p.rule.spec.kind !== "path") throw new Error(`not a path rule: ${t}`);
        return compilePath(p.rule.spec.pattern);
      });
      for (const w of [ws, wsLink]) {
        for (const p of [...paths, `${wsLink}/src/module7/deep/a.ts`, `${wsLink}/.env`]) {
          const v = pathView(p, w);
          const first = matchers.findIndex((m) => (which === "allow" ? pathAllows({ ...m, literal: null }, v) : pathHits({ ...m, literal: null }, v)));
          expect([which, w, p, rs.judge({ name: "developer__read_file" }, { path: p }, w)?.rule ?? null]).toEqual([which, w, p, first < 0 ? null : list[first]!]);
        }
      }
    }
  }
});
