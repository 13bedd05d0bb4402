/** `connectionError`'s message: the SDK's own text ("Connection error.") then ours, with one full stop between (it read "Connection error.. Check"). */
import { expect, test } from "bun:test";
import { connectionError } from "./errors.ts";

test("one full stop after the SDK's message, whether or not it ends with one", () => {
  for (const m of ["Connection error.", "Connection error", "fetch failed. "]) {
    const e = connectionError("http://127.0.0.1:11434/v1", m, "");
    expect(e.message).not.toContain("..");
    expect(e.message).toMatch(/^Could not reach the model server at http:\/\/127\.0\.0\.1:11434\/v1: (Connection error|fetch failed)\. Check that it is running/);
  }
});
