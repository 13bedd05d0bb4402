import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { parseDocument } from "yaml";
import { AirlockError } from "../errors.ts";
import { parseConfigText } from "./load.ts";
import { parseSimpleYaml } from "./simple-yaml.ts";
import { mulberry32 } from "../../test/fixtures/seeded-random.ts";

const REPO = join(import.meta.dir, "..", "..");

/** What the `yaml` package makes of `text` (as config/load.ts calls it), or "error" when it refuses it (a syntax error, or `toJS` throwing: an unresolved alias, too many aliases). */
function viaYamlPackage(text: string): unknown {
  // logLevel only keeps the package's stderr warnings (a collection as a key) out of the test output; values and errors are the same
  const doc = parseDocument(text, { prettyErrors: false, uniqueKeys: true, logLevel: "error" });
  if (doc.errors.length > 0) return "error";
  try {
    return doc.toJS({ maxAliasCount: 100 }) ?? null;
  } catch {
    return "error";
  }
}

/** The YAML texts of the repository: example files and every ```yaml block of docs/. */
function repositoryTexts(): { name: string; text: string }[] {
  const out: { name: string; text: string }[] = [];
  const walk = (dir: string) => {
    for (const e of readdirSync(join(REPO, dir), { withFileTypes: true })) {
      const rel = join(dir, e.name);
      if (e.isDirectory()) walk(rel);
      else if (e.name.endsWith(".yaml")) out.push({ name: rel, text: readFileSync(join(REPO, rel), "utf8") });
    }
  };
  walk("examples");
  for (const f of readdirSync(join(REPO, "docs"))) {
    if (!f.endsWith(".md")) continue;
    const md = readFileSync(join(REPO, "docs", f), "utf8");
    let i = 0;
    for (const m of md.matchAll(/^```yaml\n([\s\S]*?)^```$/gm)) out.push({ name: `docs/${f} block ${++i}`, text: m[1]! });
  }
  return out;
}

/** Scalars of every kind the two parsers might read differently; the subset must take only those they agree on. */
const SCALARS = [
  "openai", "gpt-4o-mini", "http://127.0.0.1:11434/v1", "https://api.example.com/v1?a=1&b=2", "/usr/bin/env", "./hooks/guard.sh",
  "../x", "$HOME/bin", "npx -y @scope/server --flag", "a b  c", "developer__*", "true", "false", "null", "True", "FALSE", "Null",
  "NULL", "~", "~/x", "yes", "no", "on", "off", "Yes", "y", "n", "Y", "0", "1", "-1", "+1", "12", "007", "0777", "0o17", "0x1F",
  "1_000", "1e3", "1.5", "-2.25", ".5", "5.", ".inf", "-.inf", ".nan", "12:30", "12:30:00", "2001-12-14", "2001-12-14t21:59:43.10-05:00",
  "123456789012345678", "9007199254740993", '"quoted # not a comment"', "'single'", "'it''s'", '"esc\\n"', '""', "''", "a # comment",
  "a#b", "x: y", "x:", "-", "- a", "&anchor a", "*alias", "!tag a", "!!str 1", "|", ">", "{a: 1}", "[1, 2]", "@at", "`tick`", "%pct",
  "?q", ":c", ",c", "a,b", "a?b", "a&b*c!d", "cmd | grep x > out", "(x)", "<<", "a  ", "=", "a=b", "^x",
  "[]", "{}", "[a, b]", "[a, [b, c], {d: 1}]", "{ type: command, command: '\"$X/h.sh\"', timeout: 10 }", "{a: 1, a: 2}", "[a,]", "[a, , b]",
  "{a:1}", "[yes, no]", "[1, 0777, 1e3]", "['x', \"y\"]", "[a b, c]", "{ a: [1, 2], b: { c: null } } # c", "[a] x", "[a", "{a: 1",
  "[\"a, b\", 'c]']", "{ 'k': 1 }", "[~]", "[a: 1]", "{ a: b: c }", "[ a ]", "[-1, +1, .5]",
];

describe("parseSimpleYaml", () => {
  test("reads every repository YAML text it takes exactly as the yaml package does, and takes the plain ones", () => {
    const texts = repositoryTexts();
    let taken = 0;
    for (const { name, text } of texts) {
      const fast = parseSimpleYaml(text);
      if (fast === undefined) continue;
      taken++;
      expect({ name, value: fast.value }).toEqual({ name, value: viaYamlPackage(text) });
    }
    // the check sees texts on both sides: plain ones taken, others (flow, block scalars, …) left to the package
    expect(texts.length).toBeGreaterThan(10);
    expect(taken).toBeGreaterThan(3);
    expect(taken).toBeLessThan(texts.length);
    expect(parseSimpleYaml(readFileSync(join(REPO, "examples", "demo", "airlock.yaml"), "utf8"))).toBeDefined();
  });

  test("reads each kind of scalar, in a mapping, a list and a list of mappings, as the yaml package does or not at all", () => {
    let taken = 0;
    for (const s of SCALARS) {
      const texts = [`key: ${s}\n`, `outer:\n  key: ${s}\n  other: 1\n`, `list:\n  - ${s}\n  - x\n`, `list:\n- ${s}\n`, `groups:\n  - name: ${s}\n    more:\n      - ${s}\n`];
      for (const text of texts) {
        const fast = parseSimpleYaml(text);
        if (fast === undefined) continue;
        taken++;
        expect({ text, value: fast.value }).toEqual({ text, value: viaYamlPackage(text) });
      }
    }
    expect(taken).toBeGreaterThan(100);
  });

  test("takes nested blocks with comments and null values as the yaml package does", () => {
    const text = [
      "# airlock",
      "mode: default # the mode",
      "provider:",
      "  name: openai",
      "  base_url: http://127.0.0.1:8080/v1",
      "",
      "hooks:",
      "  PreToolUse:",
      "  - matcher: \"developer__*\"",
      "    hooks:",
      "      - type: command",
      "        command: ./guard.sh",
      "        timeout: 30",
      "  - matcher: x",
      "  Stop:",
      "tools:",
      "  developer__shell:",
      "    permission: ask",
      "empty:",
      "",
    ].join("\n");
    const fast = parseSimpleYaml(text);
    expect(fast).toBeDefined();
    expect(fast!.value).toEqual(viaYamlPackage(text));
  });

  test("leaves a repeated key at any depth to the yaml package", () => {
    for (const text of ["a: 1\na: 2\n", "a:\n  b: 1\n  c: 2\n  b: 3\n", "l:\n  - x: 1\n    x: 2\n", "a:\n  b: 1\nc: 2\na: 3\n"]) {
      expect({ text, fast: parseSimpleYaml(text) }).toEqual({ text, fast: undefined });
      expect(viaYamlPackage(text)).toBe("error");
    }
    // the same key spelt otherwise (quoted, escaped): quoted keys are outside the subset, so the package refuses the repeat
    for (const text of ['a: 1\n"a": 2\n', "a: 1\n'a': 2\n", 'a: 1\n"\\x61": 2\n', 'a: 1\n"\\u0061": 2\n', 'k: {a: 1, "a": 2}\n', "k: {a: 1, 'a': 2}\n"]) {
      expect({ text, fast: parseSimpleYaml(text) }).toEqual({ text, fast: undefined });
      expect({ text, pkg: viaYamlPackage(text) }).toEqual({ text, pkg: "error" });
    }
    // the same key in two mappings is no repeat
    expect(parseSimpleYaml("a:\n  x: 1\nb:\n  x: 2\nl:\n  - x: 1\n  - x: 2\n")?.value).toEqual({ a: { x: 1 }, b: { x: 2 }, l: [{ x: 1 }, { x: 2 }] });
  });

  test("leaves merge keys, anchors, flow collections over several lines, block scalars, several documents, tabs and odd indentation to the yaml package", () => {
    const outside = [
      "base: &b\n  x: 1\nother:\n  <<: *b\n",
      "a: {x: 1,\n  y: 2}\n",
      "a: [1,\n  2]\n",
      "a: {x: 1, x: 2}\n",
      "a: |\n  text\n",
      "a: >\n  text\n",
      "---\na: 1\n",
      "a: 1\n...\n",
      "a:\n\tb: 1\n",
      "a: 1\r\nb: 2\r\n",
      "a: \"x\u0085y\"\n",
      "a: 'x\u2028y'\n",
      "# bell \u0007\na: 1\n",
      "a: 1 # nul \u0000\n",
      "  a: 1\n",
      "a: 1\n  b: 2\n",
      "a: plain\n  continued\n",
      "- a\nb: 1\n",
      "a: 1\n- b\n",
      "\"quoted key\": 1\n",
      "__proto__: 1\n",
      "yes: 1\n",
      "a:\n  -\n    b: 1\n",
      "a:\n  - - x\n",
    ];
    for (const text of outside) expect({ text, fast: parseSimpleYaml(text) }).toEqual({ text, fast: undefined });
  });

  test("an empty or comment-only document is null, as with the yaml package", () => {
    for (const text of ["", "\n", "# only a comment\n"]) {
      expect(parseSimpleYaml(text)).toEqual({ value: null });
      expect(viaYamlPackage(text)).toBeNull();
    }
  });
});

describe("parseConfigText on the native path", () => {
  test("a repeated key is still refused with the yaml package's message and position", () => {
    const err = (() => {
      try {
        parseConfigText("mode: default\nmode: plan\n", "airlock.yaml");
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(AirlockError);
    expect((err as AirlockError).code).toBe("config_invalid");
    expect((err as AirlockError).message).toStartWith("airlock.yaml:2:1: YAML syntax error: Map keys must be unique");
  });

  test("an invalid value in a plain config names its line and column (read with the yaml package for the message)", () => {
    const text = "provider:\n  name: openai\nlimits:\n  max_concurrent_calls: eight\n";
    expect(parseSimpleYaml(text)).toBeDefined();
    expect(() => parseConfigText(text, "airlock.yaml")).toThrow(/limits\.max_concurrent_calls: expected number, got "eight" \(line 4, column 25\)/);
  });
});

/** `value` as JSON with -0, the infinities, NaN and undefined spelled out (JSON would fold them into 0 or null). */
function exact(value: unknown): string {
  return JSON.stringify(value, (_k, x: unknown) =>
    Object.is(x, -0) ? "<-0>" : typeof x === "number" && !Number.isFinite(x) ? `<${x}>` : x === undefined ? "<undefined>" : x,
  );
}

/** Keys of every kind: plain ones the subset takes, and quoted, numeric, 1.1-boolean, merge, empty, overlong ones it must not (no collections: the package warns on stderr for each). */
const FUZZ_KEYS = [
  "a", "b", "c", "mode", "deny", "allow", "x-y", "_k", "A", "key_1", "e", "E", "a-", "constructor", "toString", "yes", "on", "No", "null",
  "Null", "true", "y", "n", "inf", "nan", "NaN", '"a"', "'a'", '"\\x61"', '"\\u0061"', "'it''s'", "1", "0o1", "01", "1.0", '""', "? a",
  "a b", "a:b", "<<", "__proto__", "~", "-a", "a#", "!!str a", "&x a", "*x", ".inf", "2001-12-14", "1:30", "0x1", "1_0",
  "-", "é", "k".repeat(1025), "k".repeat(1024),
];
/** Values the subset should take, to keep the share of taken documents up. */
const FUZZ_PLAIN = ["x", "a b", "./p", "$H", "1", "0", "-3", "2.5", "true", "false", "null", '"q"', "'s'", "[]", "{}", "[a, 1]", "{a: 1, b: [x]}", '""', "a:b", "http://h/x"];
/** What a mutation inserts: indicators, whitespace the versions read differently, control characters, a lone surrogate, lines. */
const FUZZ_TOKENS = [
  " ", "  ", "\t", "\r", "\uFEFF", "#", " #", "# c", ":", ": ", "- ", "-", "'", '"', "\\", "[", "]", "{", "}", ",", "&a ", "*a", "!",
  "!!str ", "<<: ", "---\n", "...\n", "\n", "\n  ", "? ", "|", ">", "%", "@", "`", "\u0085", "\u2028", "\u00a0", "\x00", "\x7f", "\x1b",
  "a", "1", "0", ".", "~", "=", "a: 1\n", "a: 2\n", "  a: 1\n", "\n\u00a0\u00a0", "\u3000", "\u2007", "- x\n", "\ud800", "\udc00", "é", "😀", "[".repeat(100), "]".repeat(100),
];

/**
 * `count` YAML texts from `seed`: block mappings and sequences up to 5 deep with indentation steps of 1–4, sequences at their
 * key's column, `- key:` items, comments, trailing spaces, repeated keys, every kind of scalar and flow collection; half of
 * them then mutated (a token inserted, a character dropped, a line repeated or shifted by one column), a few with a BOM or CRLF.
 */
function fuzzTexts(seed: number, count: number): string[] {
  const r = mulberry32(seed);
  const pick = <T,>(a: readonly T[]): T => a[Math.floor(r() * a.length)]!;
  const block = (col: number, depth: number, lines: string[], firstPrefix: string | null): void => {
    const isSeq = r() < 0.35;
    const n = 1 + Math.floor(r() * 4);
    const keys: string[] = [];
    for (let i = 0; i < n; i++) {
      let pre = i === 0 && firstPrefix !== null ? firstPrefix : " ".repeat(col);
      if (r() < 0.05) pre = " ".repeat(Math.max(0, col + (r() < 0.5 ? -1 : 1)));
      else if (col > 0 && r() < 0.03) pre = pick(["\u00a0", "\u3000"]).repeat(col); // a Unicode space is no indentation in YAML
      let head: string;
      if (isSeq) head = `${pre}- `;
      else {
        let k = r() < 0.15 && keys.length > 0 ? pick(keys) : pick(FUZZ_KEYS);
        if (r() < 0.7) k = pick(["a", "b", "c", "mode", "deny", "x-y", "_k", "key_1"]);
        keys.push(k);
        head = pre + k + (r() < 0.03 ? " :" : ":");
      }
      const tail = (r() < 0.1 ? ` # ${pick(["c", "x: y", "#", "'", '"', "]"])}` : "") + (r() < 0.1 ? pick([" ", "  ", "\t"]) : "");
      if (depth < 4 && r() < 0.4) {
        if (isSeq && r() < 0.5) {
          block(col + 2, depth + 1, lines, head); // `- key: …`: a mapping in the sequence
          continue;
        }
        lines.push((isSeq ? head.trimEnd() : head) + tail);
        if (r() < 0.1) lines.push(pick(["", "  # c", "#", "   ", "# - x"]));
        block(!isSeq && r() < 0.3 ? col : col + pick([1, 2, 2, 2, 3, 4]), depth + 1, lines, null);
      } else {
        const v = r() < 0.1 ? "" : r() < 0.5 ? pick(SCALARS) : pick(FUZZ_PLAIN);
        lines.push(head + (isSeq || v === "" ? "" : pick([" ", " ", " ", "  "])) + v + tail);
      }
    }
  };
  const out: string[] = [];
  for (let c = 0; c < count; c++) {
    const lines: string[] = [];
    if (r() < 0.05) lines.push(pick(["# top", "---", "%YAML 1.2\n---", "--- # x"]));
    block(0, 0, lines, null);
    if (r() < 0.05) lines.push(pick(["...", "---", "---\nb: 2"]));
    let text = lines.join(r() < 0.05 ? "\r\n" : "\n") + (r() < 0.9 ? "\n" : "");
    const mutations = r() < 0.6 ? 0 : 1 + Math.floor(r() * 3);
    for (let m = 0; m < mutations; m++) {
      const at = Math.floor(r() * (text.length + 1));
      const kind = r();
      if (kind < 0.5) text = text.slice(0, at) + pick(FUZZ_TOKENS) + text.slice(at);
      else if (kind < 0.7) text = text.slice(0, at) + text.slice(at + 1);
      else {
        const ls = text.split("\n");
        const i = Math.floor(r() * ls.length);
        if (kind < 0.85) ls.splice(i, 0, ls[i]!);
        else ls[i] = r() < 0.5 ? ` ${ls[i]}` : ls[i]!.replace(/^ /, "");
        text = ls.join("\n");
      }
    }
    if (r() < 0.02) text = `\uFEFF${text}`;
    out.push(text);
  }
  return out;
}

describe("parseSimpleYaml against inputs nobody wrote", () => {
  test("a differential fuzzer (fixed seed): every text the subset takes reads exactly as with the yaml package, refusals included", () => {
    const diffs: string[] = [];
    let taken = 0;
    let refusedByPackage = 0;
    const texts = fuzzTexts(20261202, 8_000);
    for (const text of texts) {
      let fast: { value: unknown } | undefined;
      try {
        fast = parseSimpleYaml(text);
      } catch (e) {
        diffs.push(`${JSON.stringify(text).slice(0, 200)}: threw ${(e as Error).message}`);
        continue;
      }
      const pkg = viaYamlPackage(text);
      if (pkg === "error") refusedByPackage++;
      if (fast === undefined) continue;
      taken++;
      if (exact(fast.value) !== exact(pkg) || !Bun.deepEquals(fast.value, pkg, true)) {
        diffs.push(`${JSON.stringify(text).slice(0, 200)}: fast ${exact(fast.value).slice(0, 200)} ≠ yaml ${exact(pkg).slice(0, 200)}`);
      }
    }
    expect(diffs).toEqual([]);
    // both sides seen: many texts taken, many the package refuses (and so must be left)
    expect(taken).toBeGreaterThan(500);
    expect(refusedByPackage).toBeGreaterThan(800);
  }, 60_000);

  test("a lone surrogate in a quoted scalar is left to the yaml package (Bun.YAML reads it as U+FFFD)", () => {
    for (const text of ['a: "\ud800"\n', "a: 'x\udc00'\n", 'l:\n  - "\ud83d%\ude00"\n', "a: ['\ud800']\n", "# \ud800\na: 1\n"]) {
      expect({ text, fast: parseSimpleYaml(text) }).toEqual({ text, fast: undefined });
    }
    // a well-formed pair is no lone surrogate: still taken, and the same
    expect(parseSimpleYaml('a: "😀"\n')?.value).toEqual(viaYamlPackage('a: "😀"\n'));
    expect(parseSimpleYaml('a: "😀"\n')).toBeDefined();
  });

  test("a key of more than 1024 characters is left to the yaml package, which refuses it", () => {
    for (const text of [`${"k".repeat(1025)}: 1\n`, `- ${"k".repeat(1025)}: 1\n`, `a:\n  ${"k".repeat(2000)}:\n`]) {
      expect(viaYamlPackage(text)).toBe("error");
      expect({ text: text.slice(0, 20), fast: parseSimpleYaml(text) }).toEqual({ text: text.slice(0, 20), fast: undefined });
    }
    expect(() => parseConfigText(`${"k".repeat(1025)}: 1\n`, "airlock.yaml")).toThrow(/airlock\.yaml:1:1: YAML syntax error: The : indicator must be at most 1024 chars/);
  });

  test("flow collections and blocks nested deeper than any config are left to the yaml package, without a throw", () => {
    const deep = [`k: ${"[".repeat(100_000)}${"]".repeat(100_000)}\n`, `k: ${"{a: ".repeat(50_000)}1${"}".repeat(50_000)}\n`, `k: ${"[".repeat(300)}${"]".repeat(300)}\n`];
    deep.push(Array.from({ length: 300 }, (_, i) => `${" ".repeat(i)}k:`).join("\n"));
    for (const text of deep) expect({ text: text.slice(0, 20), fast: parseSimpleYaml(text) }).toEqual({ text: text.slice(0, 20), fast: undefined });
    // what the yaml package says of the deepest is what the config loader reports
    expect(() => parseConfigText(deep[0]!, "airlock.yaml")).toThrow(AirlockError);
  });

  test("a no-break or other Unicode space is no indentation: it is part of the key, so a key repeated after one is still refused", () => {
    for (const ws of ["\u00a0", "\u1680", "\u2007", "\u202f", "\u3000"]) {
      // the yaml package reads `${ws}${ws}b` as a second key at the top, twice: a repeated key
      const dup = `a:\n${ws}${ws}b: 1\nc:\n${ws}${ws}b: 2\n`;
      expect(viaYamlPackage(dup)).toBe("error");
      expect({ ws, fast: parseSimpleYaml(dup) }).toEqual({ ws, fast: undefined });
      for (const text of [`a:\n${ws}${ws}b: 1\n`, `a: ${ws}#c\n  b: 1\n`, `a: "x"${ws}\n`, `a: [true${ws}]\n`, `- ${ws}x\n`]) {
        expect({ text, fast: parseSimpleYaml(text) }).toEqual({ text, fast: undefined });
      }
    }
    expect(() => parseConfigText("mode: smart\nx:\n\u00a0mode: chat\ny:\n\u00a0mode: plan\n", "airlock.yaml")).toThrow(/^airlock\.yaml:\d+:\d+: YAML syntax error: Map keys must be unique/);
  });
});
