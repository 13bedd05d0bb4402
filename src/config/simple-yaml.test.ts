import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { parseDocument } from "yaml";
import { AirlockError } from "../errors.ts";
import { parseConfigText } from "./load.ts";
import { parseSimpleYaml } from "./simple-yaml.ts";

const REPO = join(import.meta.dir, "..", "..");

/** What the `yaml` package makes of `text` (as config/load.ts calls it), or "error" when it refuses it. */
function viaYamlPackage(text: string): unknown {
  const doc = parseDocument(text, { prettyErrors: false, uniqueKeys: true });
  if (doc.errors.length > 0) return "error";
  return doc.toJS({ maxAliasCount: 100 }) ?? null;
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
