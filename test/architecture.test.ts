/**
 * The shape of the house (docs/architecture.md): no import cycles, no two rooms (top-level folders of
 * src/) importing each other, and every import going down the layers below — so the
 * composition root (src/runtime.ts) is imported only by the surfaces above it. A new room must be given
 * its place here.
 */
import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { parse } from "@babel/parser";
import { measure, roomOf } from "../scripts/architecture.ts";

/** Rooms from the bottom up; a room may import rooms in lower layers only (its own room freely). */
const LAYERS: string[][] = [
  ["errors", "ids", "bounded", "package.json"],
  ["side"],
  ["config"],
  ["session"],
  ["store", "bus"],
  ["launcher", "script", "shell", "fleet"],
  ["tool", "card"],
  ["hook"],
  ["notify"],
  ["gate"],
  ["agent"],
  ["runtime"],
  ["run", "console"],
  ["scheduler"],
  ["server"],
  ["cli"],
  ["main"],
  ["boot"],
];
const layerOf = new Map(LAYERS.flatMap((rooms, i) => rooms.map((r) => [r, i] as const)));

describe("architecture", () => {
  const arch = measure();

  test("the import graph has no cycle (type-only imports count)", () => {
    expect(arch.cycles).toEqual([]);
  });

  test("only src/store/ opens SQLite: no other source file imports bun:sqlite (everything else goes through store/sql.ts)", () => {
    const offenders: string[] = [];
    const walk = (dir: string): void => {
      for (const e of readdirSync(dir, { withFileTypes: true })) {
        const p = join(dir, e.name);
        if (e.isDirectory()) walk(p);
        else if (/\.tsx?$/.test(e.name) && !/\.test\.tsx?$/.test(e.name) && !p.startsWith(join("src", "store") + "/")) {
          if (/\bfrom\s+["']bun:sqlite["']|import\(\s*["']bun:sqlite["']\s*\)/.test(readFileSync(p, "utf8"))) offenders.push(p);
        }
      }
    };
    walk("src");
    expect(offenders).toEqual([]);
  });

  test("no two rooms import each other", () => {
    expect(arch.roomPairs).toEqual([]);
  });

  test("every room has a layer, and every import goes to a lower layer", () => {
    const unplaced = new Set<string>();
    const upward: string[] = [];
    for (const m of arch.modules) {
      const from = roomOf(m.path);
      if (!layerOf.has(from)) unplaced.add(from);
      for (const i of m.imports) {
        const to = roomOf(i);
        if (!layerOf.has(to)) unplaced.add(to);
        if (from === to || !layerOf.has(from) || !layerOf.has(to)) continue;
        if (layerOf.get(to)! >= layerOf.get(from)!) upward.push(`${m.path} → ${i}`);
      }
    }
    expect([...unplaced]).toEqual([]);
    expect(upward).toEqual([]);
  });

  test("the measure sees the whole tree (a parser failure would hide imports)", () => {
    expect(arch.modules.length).toBeGreaterThan(100);
    expect(arch.modules.find((m) => m.path === "src/runtime.ts")?.imports).toContain("src/gate/gate.ts");
  });

  test("client/ sits above src/: it imports src/ (and zod) for types only, and nothing in src/ imports it", () => {
    const dir = join(import.meta.dir, "..", "client");
    const runtime: string[] = [];
    for (const name of readdirSync(dir).filter((n) => n.endsWith(".ts"))) {
      const ast = parse(readFileSync(join(dir, name), "utf8"), { sourceType: "module", plugins: ["typescript"] });
      for (const st of ast.program.body) {
        if (st.type !== "ImportDeclaration" && st.type !== "ExportNamedDeclaration" && st.type !== "ExportAllDeclaration") continue;
        const from = (st as { source?: { value: string } | null }).source?.value;
        if (!from || from.startsWith("node:")) continue;
        const typeOnly = (st as { importKind?: string; exportKind?: string }).importKind === "type" || (st as { exportKind?: string }).exportKind === "type";
        if (!typeOnly) runtime.push(`client/${name} → ${from}`);
      }
    }
    expect(runtime).toEqual([]);
    expect(arch.modules.flatMap((m) => m.imports.filter((i) => i.startsWith("client/")).map((i) => `${m.path} → ${i}`))).toEqual([]);
  });
});
