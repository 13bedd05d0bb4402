/**
 * @module config/schema-paths
 * Every leaf key path of a zod object schema (records and an object's catchall as `*`, arrays of objects as `[]`), used to
 * check that docs/configuration.md and examples/airlock.yaml cover every key of `airlock.yaml`.
 */

type Def = { type: string; innerType?: unknown; shape?: Record<string, unknown>; valueType?: unknown; element?: unknown; catchall?: unknown };
const defOf = (s: unknown): Def => (s as { _zod: { def: Def } })._zod.def;

/** Leaf key paths of `schema`, e.g. `limits.max_concurrent_calls`, `mcp_servers.*.command`, `hooks.PreToolUse[].matcher`. */
export function leafPaths(schema: unknown, prefix = ""): string[] {
  let def = defOf(schema);
  while (def.type === "default" || def.type === "optional") def = defOf(def.innerType);
  if (def.type === "object") {
    const named = Object.entries(def.shape!).flatMap(([k, v]) => leafPaths(v, prefix ? `${prefix}.${k}` : k));
    // an object with named keys and a catchall (`tools`: `offer` plus one entry per tool name) is also a record
    const rest = def.catchall !== undefined && defOf(def.catchall).type === "object" ? leafPaths(def.catchall, `${prefix}.*`) : [];
    return [...named, ...rest];
  }
  if (def.type === "record" && defOf(def.valueType).type === "object") return leafPaths(def.valueType, `${prefix}.*`);
  if (def.type === "array" && defOf(def.element).type === "object") return leafPaths(def.element, `${prefix}[]`);
  return [prefix];
}

/** The same paths for a plain value (parsed YAML): record keys under `recordPaths` become `*`, array items `[]`. */
export function valuePaths(value: unknown, recordPaths: Set<string>, prefix = ""): string[] {
  if (Array.isArray(value)) {
    const items = value.filter((v) => v && typeof v === "object" && !Array.isArray(v));
    return items.length ? items.flatMap((v) => valuePaths(v, recordPaths, `${prefix}[]`)) : [prefix];
  }
  if (value && typeof value === "object") {
    return Object.entries(value).flatMap(([k, v]) => {
      const key = recordPaths.has(prefix) ? "*" : k;
      return valuePaths(v, recordPaths, prefix ? `${prefix}.${key}` : key);
    });
  }
  return [prefix];
}
