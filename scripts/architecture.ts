/**
 * The shape of the house, measured: the import graph of `src/` (tests left out),
 * its cycles, the rooms (top-level folders) that import each other, and the largest files and
 * functions. Printed as JSON; `test/architecture.test.ts` holds the rules it must keep.
 *
 * Every import counts, `import type` too: a cycle through types is still a cycle in the design.
 * Parsing is `@babel/parser` with its TypeScript plugin (TypeScript 7 has no stable JS API yet).
 *
 * Usage: `bun scripts/architecture.ts [--top N]`
 */
import { parse } from "@babel/parser";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

/** One source file: its path from the repository root, its line count and what it imports. */
export interface ModuleInfo {
  path: string;
  lines: number;
  /** Resolved repository-relative paths of the project files it imports (type-only ones too). */
  imports: string[];
  /** Functions and methods with their line spans, largest first. */
  functions: { name: string; line: number; lines: number }[];
}

/** The whole measure. */
export interface Architecture {
  modules: ModuleInfo[];
  /** Each strongly connected component of more than one file (or a file importing itself). */
  cycles: string[][];
  /** Room pairs `a↔b` where a file in `a` imports one in `b` and back. */
  roomPairs: string[];
  largestFiles: { path: string; lines: number }[];
  largestFunctions: { name: string; path: string; line: number; lines: number }[];
}

const ROOT = resolve(import.meta.dir, "..");
const SOURCE_ROOTS = ["src"];

function listSources(dir: string, out: string[]): string[] {
  for (const name of readdirSync(dir)) {
    const full = join(dir, name);
    if (statSync(full).isDirectory()) listSources(full, out);
    else if (/\.tsx?$/.test(name) && !/\.test\.tsx?$/.test(name) && !name.endsWith(".d.ts")) out.push(full);
  }
  return out;
}

function resolveImport(from: string, spec: string): string | undefined {
  if (!spec.startsWith(".")) return undefined;
  const base = resolve(dirname(from), spec);
  const candidates = [base, `${base}.ts`, `${base}.tsx`, join(base, "index.ts")];
  for (const c of candidates) if (existsSync(c) && statSync(c).isFile()) return c;
  return undefined;
}

/** The room a file lives in: its top folder under `src/` (`src/runtime.ts` is room `runtime`) (files outside `src/`, such as `package.json`, are their own room). */
export function roomOf(path: string): string {
  const parts = path.split("/");
  if (parts[0] === "src") return (parts[1] ?? "").replace(/\.tsx?$/, "");
  return parts[0] ?? path;
}

type Node = { type: string; loc?: { start: { line: number }; end: { line: number } }; [k: string]: unknown };

function nameOf(node: Node, parent: Node | undefined): string {
  const id = node.id as Node | null | undefined;
  if (id && typeof id.name === "string") return id.name;
  const key = node.key as Node | undefined;
  if (key && typeof key.name === "string") return key.name;
  if (parent?.type === "VariableDeclarator") {
    const pid = parent.id as Node;
    if (typeof pid.name === "string") return pid.name;
  }
  if (parent?.type === "ObjectProperty" || parent?.type === "ClassProperty") {
    const pk = parent.key as Node;
    if (typeof pk.name === "string") return pk.name;
  }
  return "(anonymous)";
}

const FUNCTION_TYPES = new Set([
  "FunctionDeclaration", "FunctionExpression", "ArrowFunctionExpression", "ClassMethod", "ObjectMethod", "ClassPrivateMethod",
]);

function analyse(file: string): ModuleInfo {
  const text = readFileSync(file, "utf8");
  const ast = parse(text, { sourceType: "module", plugins: file.endsWith(".tsx") ? ["typescript", "jsx"] : ["typescript"], errorRecovery: false });
  const specs: string[] = [];
  const functions: ModuleInfo["functions"] = [];
  const classStack: string[] = [];
  const walk = (node: Node, parent: Node | undefined): void => {
    switch (node.type) {
      case "ImportDeclaration":
      case "ExportNamedDeclaration":
      case "ExportAllDeclaration": {
        const source = node.source as Node | null | undefined;
        if (source && typeof source.value === "string") specs.push(source.value);
        break;
      }
      case "ImportExpression":
      case "TSImportType": {
        const source = (node.source ?? node.argument) as Node | undefined;
        const lit = source?.type === "TSLiteralType" ? (source.literal as Node) : source;
        if (lit && typeof lit.value === "string") specs.push(lit.value);
        break;
      }
      case "CallExpression": {
        const callee = node.callee as Node;
        const arg = (node.arguments as Node[])[0];
        if (callee.type === "Import" && arg && typeof arg.value === "string") specs.push(arg.value);
        break;
      }
    }
    const isClass = node.type === "ClassDeclaration" || node.type === "ClassExpression";
    if (isClass) classStack.push(nameOf(node, parent));
    if (FUNCTION_TYPES.has(node.type) && node.loc) {
      const own = nameOf(node, parent);
      const owner = node.type.startsWith("Class") ? `${classStack.at(-1) ?? "?"}.` : "";
      functions.push({ name: owner + own, line: node.loc.start.line, lines: node.loc.end.line - node.loc.start.line + 1 });
    }
    for (const [key, value] of Object.entries(node)) {
      if (key === "loc" || key === "leadingComments" || key === "trailingComments" || key === "innerComments") continue;
      if (Array.isArray(value)) {
        for (const child of value) if (child && typeof child === "object" && typeof (child as Node).type === "string") walk(child as Node, node);
      } else if (value && typeof value === "object" && typeof (value as Node).type === "string") {
        walk(value as Node, node);
      }
    }
    if (isClass) classStack.pop();
  };
  walk(ast.program as unknown as Node, undefined);
  const imports = [...new Set(specs.map((s) => resolveImport(file, s)).filter((p): p is string => p !== undefined))]
    .map((p) => relative(ROOT, p));
  functions.sort((a, b) => b.lines - a.lines);
  return { path: relative(ROOT, file), lines: text.split("\n").length, imports, functions };
}

/** Tarjan's strongly connected components over the file graph. */
function stronglyConnected(modules: ModuleInfo[]): string[][] {
  const graph = new Map(modules.map((m) => [m.path, m.imports]));
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const out: string[][] = [];
  let next = 0;
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next);
    next++;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, index.get(w)!));
      }
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || (graph.get(v) ?? []).includes(v)) out.push(component.sort());
    }
  };
  for (const m of modules) if (!index.has(m.path)) visit(m.path);
  return out;
}

/** Measures the tree under the repository root. */
export function measure(top = 10): Architecture {
  const files = SOURCE_ROOTS.flatMap((r) => listSources(join(ROOT, r), []));
  const modules = files.map(analyse).sort((a, b) => a.path.localeCompare(b.path));
  const edges = new Set<string>();
  for (const m of modules) {
    for (const i of m.imports) {
      const a = roomOf(m.path);
      const b = roomOf(i);
      if (a !== b) edges.add(`${a}→${b}`);
    }
  }
  const roomPairs = [...edges]
    .map((e) => e.split("→") as [string, string])
    .filter(([a, b]) => a < b && edges.has(`${b}→${a}`))
    .map(([a, b]) => `${a}↔${b}`)
    .sort();
  return {
    modules,
    cycles: stronglyConnected(modules),
    roomPairs,
    largestFiles: [...modules].sort((a, b) => b.lines - a.lines).slice(0, top).map(({ path, lines }) => ({ path, lines })),
    largestFunctions: modules
      .flatMap((m) => m.functions.map((f) => ({ ...f, path: m.path })))
      .sort((a, b) => b.lines - a.lines)
      .slice(0, top),
  };
}

if (import.meta.main) {
  const topFlag = process.argv.indexOf("--top");
  const top = topFlag >= 0 ? Number(process.argv[topFlag + 1]) : 10;
  const { modules: _modules, ...summary } = measure(top);
  console.log(JSON.stringify({ files: _modules.length, ...summary }, null, 2));
}
