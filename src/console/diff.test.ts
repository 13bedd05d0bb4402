import { describe, expect, test } from "bun:test";
import { diffLines } from "./diff.ts";

describe("diff.diffLines", () => {
  test("keeps common lines and marks removed and added ones in order", () => {
    expect(diffLines("a\nb\nc\nd\n", "a\nc\nx\nd\n")).toEqual({
      lines: [
        { op: " ", text: "a" },
        { op: "-", text: "b" },
        { op: " ", text: "c" },
        { op: "+", text: "x" },
        { op: " ", text: "d" },
      ],
      exact: true,
    });
  });

  test("a new file is all additions; an emptied file all removals", () => {
    expect(diffLines("", "x\ny")).toEqual({ lines: [{ op: "+", text: "x" }, { op: "+", text: "y" }], exact: true });
    expect(diffLines("x\n", "")).toEqual({ lines: [{ op: "-", text: "x" }], exact: true });
  });

  test("a middle larger than the LCS budget is a block replacement, flagged, with every line kept", () => {
    const d = diffLines("h\n1\n2\n3\nt", "h\n4\n5\nt", 4);
    expect(d.exact).toBe(false);
    expect(d.lines.map((l) => l.op + l.text)).toEqual([" h", "-1", "-2", "-3", "+4", "+5", " t"]);
  });
});
