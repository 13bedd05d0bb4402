/**
 * @module tool/mcp/result.test
 * MCP results as tool results: structuredContent wins, text joins, binary blocks are described.
 */
import { describe, expect, test } from "bun:test";
import { contentText, resultValue } from "./result.ts";

describe("resultValue", () => {
  test("structuredContent when present", () => {
    expect(resultValue({ content: [{ type: "text", text: "{}" }], structuredContent: { a: 1 } })).toEqual({ a: 1 });
  });
  test("text blocks joined with newlines", () => {
    expect(resultValue({ content: [{ type: "text", text: "one" }, { type: "text", text: "two" }] })).toBe("one\ntwo");
  });
  test("no content: empty text", () => {
    expect(resultValue({})).toBe("");
  });
});

describe("contentText", () => {
  test("images, embedded resources and links are described, never dumped", () => {
    const text = contentText({
      content: [
        { type: "image", mimeType: "image/png", data: "AAAA" },
        { type: "resource", resource: { uri: "file:///a.txt", text: "inline text" } },
        { type: "resource", resource: { uri: "file:///b.bin", mimeType: "application/octet-stream", blob: "AAAA" } },
        { type: "resource_link", uri: "file:///c", name: "c" },
      ],
    });
    expect(text.split("\n")).toEqual([
      "[image image/png, 3 bytes, not shown]",
      "inline text",
      "[resource file:///b.bin (application/octet-stream), binary, not shown]",
      "[resource_link file:///c (c)]",
    ]);
  });
});
