import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import { AirlockError } from "../errors.ts";
import { Bus } from "./bus.ts";
import { Card, EVENT_NAMES, Events, SSE_EVENT_NAMES, Snapshot, type AnyEvent, type EventName } from "./events.ts";

const DOCS = join(import.meta.dir, "..", "..", "docs");
const api = readFileSync(join(DOCS, "api.md"), "utf8");
const spec = readFileSync(join(DOCS, "spec.md"), "utf8");

/** A field as a doc writes it: `name`, `name?`, `name: a|b`, `name: {x, y?}`, `name: bool`. */
interface DocField {
  name: string;
  optional: boolean;
  nested?: DocField[];
  values?: string[];
  type?: "bool";
}

/** Splits at commas outside brackets. */
function splitTop(text: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let cur = "";
  for (const ch of text) {
    if ("{[(".includes(ch)) depth++;
    if ("}])".includes(ch)) depth--;
    if (ch === "," && depth === 0) {
      parts.push(cur);
      cur = "";
    } else cur += ch;
  }
  if (cur.trim()) parts.push(cur);
  return parts.map((p) => p.trim());
}

/** Parses `{a, b?, c: {x}, d: "p"|"q", e: bool}` (the braces included); parenthesised notes like `(bytes)` are skipped. */
function parseFields(braced: string): DocField[] {
  const t = braced.trim();
  if (!t.startsWith("{") || !t.endsWith("}")) throw new Error(`not a {…} field list: ${braced}`);
  return splitTop(t.slice(1, -1)).map((part) => {
    const m = /^([a-z_][a-z0-9_]*)(\?)?(?:\s*:\s*(.+))?$/s.exec(part.replace(/\s*\([^()]*\)/g, "").trim());
    if (!m) throw new Error(`cannot read the field "${part}" in ${braced}`);
    const f: DocField = { name: m[1]!, optional: m[2] === "?" };
    const value = m[3]?.trim();
    if (value === undefined) return f;
    if (value.startsWith("{")) f.nested = parseFields(value);
    else if (value.includes("|")) f.values = value.split("|").map((v) => v.trim().replace(/^"|"$/g, ""));
    else if (value === "bool") f.type = "bool";
    else throw new Error(`cannot read the type "${value}" of ${f.name} in ${braced}`);
    return f;
  });
}

/** The differences between fields as documented and an object schema, as sentences (none: they match). */
function mismatches(doc: DocField[], schema: z.ZodObject, where: string): string[] {
  const out: string[] = [];
  const shape = schema.shape as Record<string, z.ZodType>;
  const documented = new Set(doc.map((f) => f.name));
  for (const key of Object.keys(shape)) if (!documented.has(key)) out.push(`${where}: the schema has ${key}, the doc does not`);
  for (const f of doc) {
    const field = shape[f.name];
    if (!field) {
      out.push(`${where}: the doc has ${f.name}, the schema does not`);
      continue;
    }
    const optional = field instanceof z.ZodOptional;
    let inner: z.ZodType = optional ? (field.unwrap() as z.ZodType) : field;
    if (optional !== f.optional) out.push(`${where}.${f.name}: ${optional ? "optional" : "required"} in the schema, ${f.optional ? "optional" : "required"} in the doc`);
    if (inner instanceof z.ZodArray) inner = inner.element as z.ZodType;
    if (f.nested) {
      if (inner instanceof z.ZodObject) out.push(...mismatches(f.nested, inner, `${where}.${f.name}`));
      else out.push(`${where}.${f.name}: an object in the doc, not in the schema`);
    }
    if (f.values) {
      if (inner instanceof z.ZodEnum) {
        const want = [...(inner.options as string[])].sort();
        if (JSON.stringify([...f.values].sort()) !== JSON.stringify(want)) out.push(`${where}.${f.name}: the doc says ${f.values.join("|")}, the schema ${want.join("|")}`);
      } else out.push(`${where}.${f.name}: a list of values in the doc, not an enum in the schema`);
    }
    if (f.type === "bool" && !(inner instanceof z.ZodBoolean)) out.push(`${where}.${f.name}: bool in the doc, not in the schema`);
  }
  return out;
}

/** The rows of the first markdown table after `heading`: cells with `\|` kept inside them. */
function tableRows(md: string, heading: string): string[][] {
  const at = md.indexOf(`\n${heading}\n`);
  if (at < 0) throw new Error(`no "${heading}" section`);
  const lines = md.slice(at + heading.length + 2).split("\n");
  const start = lines.findIndex((l) => l.startsWith("|"));
  const rows: string[][] = [];
  for (const line of lines.slice(start)) {
    if (!line.startsWith("|")) break;
    const cells = line.replaceAll("\\|", "\u0000").split("|").slice(1, -1).map((c) => c.replaceAll("\u0000", "|").trim());
    if (/^-+$/.test(cells[0] ?? "") || cells[0] === "event" || cells[0] === "field") continue;
    rows.push(cells);
  }
  return rows;
}

/** The backticked names in a cell (`a` · `b` → [a, b]). */
const namesIn = (cell: string) => [...cell.matchAll(/`([a-z_][a-z0-9_]*)`/g)].map((m) => m[1]!);
/** The first backticked `{…}` in a text, or null. */
const bracedIn = (text: string) => /`(\{[^`]*\})`/.exec(text)?.[1] ?? null;

/** The schema of an SSE event name. */
const schemaOf = (name: string): z.ZodObject => (name === "snapshot" ? Snapshot : (Events[name as EventName] as z.ZodObject));

/** The card as docs/api.md's "Cards" table lists it: one row per field (or two names sharing a row), "optional" in the type cell. */
function cardTableFields(): DocField[] {
  return tableRows(api, "## Cards").flatMap(([names = "", type = "", meaning = ""]) =>
    namesIn(names).map((name) => {
      const f: DocField = { name, optional: /\boptional\b/.test(type) };
      const braced = name === "files" ? bracedIn(meaning) : null;
      if (braced) f.nested = parseFields(braced);
      return f;
    }),
  );
}

describe("events.Events", () => {
  test("docs/api.md's event table has one row per SSE event, and no other", () => {
    const rows = tableRows(api, "## Server-Sent Events").map((r) => namesIn(r[0] ?? "")[0]);
    expect([...rows].sort()).toEqual([...SSE_EVENT_NAMES].sort());
  });

  test("each event's fields in docs/api.md match its schema: names, optional ones, nested objects and values", () => {
    const problems: string[] = [];
    for (const [nameCell = "", data = ""] of tableRows(api, "## Server-Sent Events")) {
      const name = namesIn(nameCell)[0]!;
      if (!(SSE_EVENT_NAMES as readonly string[]).includes(name)) continue; // the row-set test reports it
      const braced = bracedIn(data);
      if (braced) problems.push(...mismatches(parseFields(braced), schemaOf(name), `api.md ${name}`));
      else if (name === "action_required" && /\ba card\b/.test(data)) problems.push(...mismatches(cardTableFields(), Card, "api.md Cards"));
      else problems.push(`api.md ${name}: the row gives no {…} fields`);
    }
    expect(problems).toEqual([]);
  });

  test("SPEC §6 names every SSE event, and its payload lines match the schemas", () => {
    const line = /^SSE event names: ([^.]*)\./m.exec(spec)?.[1] ?? "";
    expect(namesIn(line).sort()).toEqual([...SSE_EVENT_NAMES].sort());
    const payloads = spec.slice(spec.indexOf("Event payloads ("));
    const bullets = [...payloads.matchAll(/^- `([a-z_]+)`: (`\{.*\}`)$/gm)];
    expect(bullets.length).toBeGreaterThanOrEqual(4);
    const problems = bullets.flatMap(([, name, braced]) =>
      (EVENT_NAMES as string[]).includes(name!) ? mismatches(parseFields(braced!.slice(1, -1)), schemaOf(name!), `spec.md ${name}`) : [`spec.md: ${name} is not an event`],
    );
    expect(problems).toEqual([]);
  });

  test("the doc reader itself sees a wrong doc: a missing field, an extra one, a wrong optional, a wrong value list", () => {
    const schema = z.strictObject({ a: z.string(), b: z.string().optional(), s: z.enum(["x", "y"]), e: z.strictObject({ code: z.string() }).optional() });
    expect(mismatches(parseFields("{a, b?, s: x|y, e?: {code}}"), schema, "t")).toEqual([]);
    expect(mismatches(parseFields("{a, s: x|y, e?: {code}, z}"), schema, "t")).toEqual([
      "t: the schema has b, the doc does not",
      "t: the doc has z, the schema does not",
    ]);
    expect(mismatches(parseFields("{a?, b?, s: x|z, e?: {code, message}}"), schema, "t")).toEqual([
      "t.a: required in the schema, optional in the doc",
      "t.s: the doc says x|z, the schema x|y",
      "t.e: the doc has message, the schema does not",
    ]);
  });
});

describe("bus.publish", () => {
  test("with validation on, a payload that breaks its schema is refused (internal) and nothing is published", () => {
    const bus = new Bus(8, true);
    const seen: AnyEvent[] = [];
    bus.subscribe("s", (e) => seen.push(e));
    const wrong = [
      ["delta", { session_id: "s", turn_id: "t" }],
      ["delta", { session_id: "s", turn_id: "t", text: "x", extra: 1 }],
      ["tool_result", { session_id: "s", call_id: "c", tool: "x", ok: false, error: { code: "no_such_code", message: "m" } }],
      ["action_resolved", { request_id: "act_1", decision: "maybe" }],
    ] as const;
    for (const [type, data] of wrong) {
      let err: unknown;
      try {
        bus.publish("s", type, data as never);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(AirlockError);
      expect((err as AirlockError).code).toBe("internal");
      expect((err as AirlockError).message).toContain(`the ${type} event does not match its schema`);
    }
    expect([seen.length, bus.lastId("s")]).toEqual([0, 0]);
  });

  test("under bun test validation is on by default; off, the payload goes out as given (the same object)", () => {
    expect(() => new Bus().publish("s", "delta", {} as never)).toThrow("does not match its schema");
    const data = { session_id: "s", turn_id: "t", text: "x", extra: 1 };
    const ev = new Bus(8, false).publish("s", "delta", data as never);
    expect(ev.data).toBe(data as never);
  });

  test("the payload type is the event's schema: tsc refuses a wrong or missing field (checked by tsc --noEmit)", () => {
    const bus = new Bus(8, false);
    const ok = bus.publish("s", "turn_started", { session_id: "s", turn_id: "t" });
    expect(ok.type).toBe("turn_started");
    // @ts-expect-error — `txt` is not a field of delta, and `text` is missing
    bus.publish("s", "delta", { session_id: "s", turn_id: "t", txt: "x" });
    // @ts-expect-error — status is one of completed | failed | cancelled
    bus.publish("s", "turn_finished", { session_id: "s", turn_id: "t", status: "done" });
    // @ts-expect-error — there is no such event
    bus.publish("s", "snapshot", {});
  });

  test("subscribers get a union they narrow by type", () => {
    const bus = new Bus(8, false);
    const texts: string[] = [];
    bus.subscribe("s", (e) => {
      if (e.type === "delta") texts.push(e.data.text);
    });
    bus.publish("s", "delta", { session_id: "s", turn_id: "t", text: "hi" });
    bus.publish("s", "turn_started", { session_id: "s", turn_id: "t" });
    expect(texts).toEqual(["hi"]);
  });
});
