/**
 * @module console/diff
 * A small line diff for the console's card previews: the longest common subsequence of lines, after
 * trimming the common head and tail. Inputs too large for the LCS table fall back to "all removed, all
 * added" and say so (`exact: false`); nothing is ever cut.
 */

/** One line of a diff: `" "` kept, `"-"` only in the old text, `"+"` only in the new one. */
export interface DiffLine {
  op: " " | "-" | "+";
  text: string;
}

/** A whole-text diff: every line of both texts, in order. */
export interface LineDiff {
  lines: DiffLine[];
  /** False when the changed middle was too large for the LCS table (more than `maxCells` cells) and is shown as a block replacement. */
  exact: boolean;
}

/** Cells of the LCS table at most (changed old lines × changed new lines): 4 million 16-bit cells = 8 MB. */
export const MAX_LCS_CELLS = 4_000_000;

function splitLines(s: string): string[] {
  if (s === "") return [];
  const lines = s.split("\n");
  if (lines[lines.length - 1] === "") lines.pop();
  return lines;
}

/**
 * Diffs two texts by lines (`\n`; a final newline does not make an extra empty line).
 * @param maxCells the most LCS cells to compute before falling back to a block replacement.
 */
export function diffLines(oldText: string, newText: string, maxCells = MAX_LCS_CELLS): LineDiff {
  const a = splitLines(oldText);
  const b = splitLines(newText);
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head++;
  let tail = 0;
  while (tail < a.length - head && tail < b.length - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail++;
  const am = a.slice(head, a.length - tail);
  const bm = b.slice(head, b.length - tail);
  const out: DiffLine[] = a.slice(0, head).map((text) => ({ op: " ", text }));
  let exact = true;
  const n = am.length;
  const m = bm.length;
  if (n * m > maxCells || n >= 65535 || m >= 65535) {
    exact = false;
    for (const text of am) out.push({ op: "-", text });
    for (const text of bm) out.push({ op: "+", text });
  } else if (n > 0 || m > 0) {
    // lcs[i][j] = LCS length of am[i..] and bm[j..], row-major in one typed array.
    const w = m + 1;
    const lcs = new Uint16Array((n + 1) * w);
    for (let i = n - 1; i >= 0; i--) {
      for (let j = m - 1; j >= 0; j--) {
        lcs[i * w + j] = am[i] === bm[j] ? lcs[(i + 1) * w + j + 1]! + 1 : Math.max(lcs[(i + 1) * w + j]!, lcs[i * w + j + 1]!);
      }
    }
    let i = 0;
    let j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && am[i] === bm[j]) {
        out.push({ op: " ", text: am[i]! });
        i++;
        j++;
      } else if (i < n && (j === m || lcs[(i + 1) * w + j]! >= lcs[i * w + j + 1]!)) {
        out.push({ op: "-", text: am[i]! });
        i++;
      } else {
        out.push({ op: "+", text: bm[j]! });
        j++;
      }
    }
  }
  for (const text of a.slice(a.length - tail)) out.push({ op: " ", text });
  return { lines: out, exact };
}
