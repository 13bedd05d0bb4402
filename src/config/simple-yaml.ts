/**
 * @module config/simple-yaml
 * The start path's YAML reader: `Bun.YAML` (native, no module to load) for a document written in a plain
 * block subset that this module checks line by line, including that no mapping repeats a key. Anything
 * outside the subset — flow collections spread over several lines, anchors, aliases, tags, `<<` merge keys, block scalars, multi-line
 * plain scalars, tabs, control characters, lone surrogates, several documents, scalars whose meaning differs between YAML 1.1 and
 * 1.2, keys over 256 characters (the package refuses one over 1024), nesting over 64 levels — gets
 * `undefined`, and the caller parses with the `yaml` package as before, so its results and its messages
 * (a duplicate key's included) are unchanged. `src/config/simple-yaml.test.ts` holds both parsers equal on
 * the subset.
 */

/** A plain key: letters, digits, `_`, `-` (not first: a digit or `-`), at most 256 characters (the `yaml` package refuses an implicit key over 1024). */
const KEY = /^([A-Za-z_][A-Za-z0-9_-]{0,255}):(?:$|[ ]+(.*)$)/;
/** A flow mapping's plain key and the space after its `:` (same characters and length as `KEY`). */
const FLOW_KEY = /^([A-Za-z_][A-Za-z0-9_-]{0,255}):[ ]+/;
/** The most blocks or flow collections open at once: deeper texts go to the `yaml` package (no recursion depth to run out of here, nor in `Bun.YAML`). */
const MAX_DEPTH = 64;
/** A number both parsers read the same (no octal, hex, exponent, `_`, sexagesimal; within 2^53). */
const NUMBER = /^-?(?:0|[1-9][0-9]{0,14})(?:\.[0-9]+)?$/;
/** Characters a plain scalar may hold here (no quotes, brackets, braces, `#`, backslash, tab). */
const PLAIN_CHARS = /^[A-Za-z0-9 _./:@+=,$~%?&*!|>()<^-]+$/;
/** Words that are booleans or nulls in YAML 1.1 or 1.2 (in any case); only exact `true`, `false`, `null` are accepted. */
const SPECIAL_WORD = /^(?:y|n|yes|no|on|off|true|false|null|nan|inf)$/i;
const QUOTED = /^(?:"[^"\\]*"|'[^']*')(?:[ ]+#.*)?$/;

/**
 * `s` without its leading and trailing spaces (U+0020 only: String#trim would also drop the no-break and other Unicode
 * spaces, which YAML reads as part of a scalar or key, so the checker would see another text than the parsers).
 */
function trimSpaces(s: string): string {
  return s.replace(/^ +| +$/g, "");
}

/** True when `s` (a value after `key: ` or `- `, its comment included) is one both parsers read the same. */
function simpleScalar(s: string): boolean {
  if (s.startsWith("[") || s.startsWith("{")) return simpleFlow(s);
  if (s.startsWith('"') || s.startsWith("'")) return QUOTED.test(s);
  const hash = s.indexOf(" #");
  return simplePlain(trimSpaces(hash >= 0 ? s.slice(0, hash) : s));
}

/** A plain scalar (no comment) both parsers read the same. */
function simplePlain(v: string): boolean {
  if (v === "" || v.includes("#") || !PLAIN_CHARS.test(v) || v.includes(": ") || v.endsWith(":")) return false;
  if (/^[-+.0-9]/.test(v)) return NUMBER.test(v) || v.startsWith("./") || v.startsWith("../");
  if (SPECIAL_WORD.test(v)) return v === "true" || v === "false" || v === "null";
  return /^[A-Za-z_/$]/.test(v);
}

/**
 * A flow sequence or mapping closed on its line (`[a, "b"]`, `{ type: command, timeout: 10 }`, nested), then
 * nothing or a comment: plain keys, no key twice in a mapping, no trailing comma, scalars as above.
 */
function simpleFlow(s: string): boolean {
  let i = 0;
  const space = () => {
    while (s[i] === " ") i++;
  };
  const value = (): boolean => {
    space();
    const c = s[i];
    if (c === "[" || c === "{") return collection(c === "{");
    if (c === '"' || c === "'") {
      const end = s.indexOf(c, i + 1);
      if (end < 0 || (c === '"' && s.slice(i, end).includes("\\")) || s[end + 1] === "'") return false;
      i = end + 1;
      return true;
    }
    const start = i;
    while (i < s.length && !",[]{}".includes(s[i]!)) i++;
    return simplePlain(trimSpaces(s.slice(start, i)));
  };
  let depth = 0;
  const collection = (isMap: boolean): boolean => {
    if (++depth > MAX_DEPTH) return false;
    const close = isMap ? "}" : "]";
    const keys = new Set<string>();
    i++;
    space();
    if (s[i] === close) {
      i++;
      depth--;
      return true;
    }
    for (;;) {
      if (isMap) {
        const m = FLOW_KEY.exec(s.slice(i));
        if (!m || keys.has(m[1]!) || m[1] === "__proto__" || SPECIAL_WORD.test(m[1]!)) return false;
        keys.add(m[1]!);
        i += m[0].length;
      }
      if (!value()) return false;
      space();
      if (s[i] === close) {
        i++;
        depth--;
        return true;
      }
      if (s[i] !== ",") return false;
      i++;
      space();
      if (s[i] === close || s[i] === ",") return false;
    }
  };
  if (!value()) return false;
  return /^(?:[ ]+#.*)?$/.test(s.slice(i));
}

/** One open block: a mapping (with the keys seen so far) or a sequence, at a column. */
interface Block {
  col: number;
  keys: Set<string> | null;
}

/**
 * Parses `text` when it is in the plain block subset (see the module note).
 * @returns `{ value }` (null for an empty document), or `undefined` when the text is outside the subset,
 *   repeats a key in a mapping, or `Bun.YAML` refuses it: then parse it with the `yaml` package.
 * Never throws.
 */
export function parseSimpleYaml(text: string): { value: unknown } | undefined {
  // tabs, CR, a BOM, control characters and the Unicode line breaks YAML versions read differently
  if (/[\r\t\uFEFF\u0085\u2028\u2029\x00-\x08\x0B\x0C\x0E-\x1F\x7F]/.test(text)) return undefined;
  // a lone surrogate (only a JS string can hold one; a file read as UTF-8 cannot): Bun.YAML reads it as U+FFFD, the package keeps it
  if (/\p{Surrogate}/u.test(text)) return undefined;
  const stack: Block[] = [];
  /** The column of a `key:` with nothing after it on its line: its block may start on the next line. */
  let pending: number | null = null;
  for (const line of text.split("\n")) {
    const body = line.replace(/^ +/, ""); // spaces only: to YAML a no-break space is no indentation but part of the key
    if (body === "" || body.startsWith("#")) continue;
    let col = line.length - body.length;
    let rest = body;
    const item = rest.startsWith("- ");
    if (!item && !KEY.test(rest)) return undefined;
    // where this line's block is: a new one under the pending key, or one already open at this column
    if (pending !== null && (col > pending || (col === pending && item))) {
      stack.push({ col, keys: item ? null : new Set() });
    } else {
      while (stack.length > 0 && stack[stack.length - 1]!.col > col) stack.pop();
      const top = stack[stack.length - 1];
      if (top && top.col === col && top.keys === null && !item && stack.length > 1) stack.pop(); // `key:` then `- a` at its column, then the next key
      if (stack.length === 0 && col === 0) stack.push({ col, keys: item ? null : new Set() });
    }
    pending = null;
    const top = stack[stack.length - 1];
    if (!top || top.col !== col || (top.keys === null) !== item || stack.length >= MAX_DEPTH) return undefined;
    if (item) {
      rest = rest.slice(2);
      col += 2;
      if (rest.startsWith(" ") || rest.startsWith("- ")) return undefined;
      if (!KEY.test(rest)) {
        if (!simpleScalar(rest)) return undefined;
        continue;
      }
      stack.push({ col, keys: new Set() }); // `- key: …`: a mapping in the sequence, its keys at col
    }
    const m = KEY.exec(rest)!;
    const key = m[1]!;
    const keys = stack[stack.length - 1]!.keys!;
    if (keys.has(key) || key === "__proto__" || SPECIAL_WORD.test(key)) return undefined;
    keys.add(key);
    const value = trimSpaces(m[2] ?? "");
    if (value === "" || value.startsWith("#")) pending = col;
    else if (!simpleScalar(value)) return undefined;
  }
  try {
    return { value: Bun.YAML.parse(text) ?? null };
  } catch {
    return undefined;
  }
}
