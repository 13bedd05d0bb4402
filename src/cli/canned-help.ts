/**
 * @module cli/canned-help
 * The help texts of the compiled binary, recorded at build time. In the source tree there are none
 * (every `--help` goes through commander); build/build.ts replaces this module in the binary with the
 * modules {@link cannedHelpModules} writes from the texts commander printed for each help invocation
 * (build/help-texts.ts `recordHelpTexts`), so `airlock --help` answers without loading commander
 * (docs/performance.md, cold start). Each distinct text is a module of its own, loaded on demand: an
 * invocation parses its ~2 KB, not the ~70 KB of all of them (docs/performance.md, 2026-12-02).
 */

/**
 * The recorded stdout of a help invocation that exited 0 with nothing on stderr, by its argv joined with
 * NUL (`"run\0--help"`), recorded with stdout not a terminal (commander wraps at 80 columns then):
 * resolves to the loader of the text (it imports that text's module), or `undefined` when that argv was not
 * recorded. The index itself is a module loaded by this call: no other start of the binary reads it
 * (docs/performance.md, issue 20, branch `wip/cold`). `null` when running from source.
 */
export const cannedHelp: ((key: string) => Promise<(() => Promise<string>) | undefined>) | null = null;

/**
 * The modules that replace this one in the compiled binary, by file name in src/cli: `canned-help.ts`
 * (`cannedHelp`, which imports the index), `canned-help-index.ts` (the index: a switch over every key of `texts`
 * to a text's number, and one `import()` per text behind a second switch, no function per text) and one
 * `canned-help-N.ts` per distinct text, exporting it as `T`.
 */
export function cannedHelpModules(texts: Readonly<Record<string, string>>): Record<string, string> {
  const byText = new Map<string, string[]>();
  for (const key of Object.keys(texts).sort()) {
    const text = texts[key]!;
    const keys = byText.get(text) ?? [];
    keys.push(key);
    byText.set(text, keys);
  }
  const files: Record<string, string> = {};
  const cases: string[] = [];
  const imports: string[] = [];
  let n = 0;
  for (const [text, keys] of byText) {
    files[`canned-help-${n}.ts`] = `export const T = ${JSON.stringify(text)};\n`;
    cases.push(`${keys.map((k) => `case ${JSON.stringify(k)}:`).join(" ")} n = ${n}; break;`);
    imports.push(`case ${n}: return import("./canned-help-${n}.ts");`);
    n++;
  }
  files["canned-help-index.ts"] =
    `export function lookup(key) {\n  let n;\n  switch (key) {\n${cases.map((c) => `    ${c}\n`).join("")}    default: return undefined;\n  }\n` +
    `  return () => textModule(n).then((m) => m.T);\n}\n` +
    `function textModule(n) {\n  switch (n) {\n${imports.map((c) => `    ${c}\n`).join("")}    default: throw new Error("no help text " + n);\n  }\n}\n`;
  files["canned-help.ts"] =
    `export function cannedHelp(key) {\n  return import("./canned-help-index.ts").then((m) => m.lookup(key));\n}\n` +
    `export function cannedHelpModules() { throw new Error("not in the binary"); }\n`;
  return files;
}
