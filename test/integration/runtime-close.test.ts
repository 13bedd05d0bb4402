/**
 * The runtime owns its resources: `close()` (and `await using`) releases what was registered in reverse
 * order of creation, goes on past a resource that fails to close, and leaves the database closed.
 */
import { describe, expect, spyOn, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Config } from "../../src/config/schema.ts";
import { createRuntime } from "../../src/runtime.ts";

describe("Runtime.close", () => {
  test("releases in reverse order, past a failing resource, then the database", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "airlock-close-"));
    const order: string[] = [];
    const errors = spyOn(console, "error").mockImplementation(() => {});
    try {
      let store;
      {
        await using rt = await createRuntime({ config: Config.parse({}), configDir: dataDir, dataDir, env: {}, log: () => {} });
        store = rt.store;
        rt.onClose(() => void order.push("first"));
        rt.onClose(() => {
          order.push("second");
          throw new Error("boom");
        });
        rt.onClose(async () => void order.push("third"));
      }
      expect(order).toEqual(["third", "second", "first"]);
      expect(errors.mock.calls.some((c) => String(c[1]).includes("boom"))).toBe(true);
      await expect(store.getSession("ses_x")).rejects.toThrow();
    } finally {
      errors.mockRestore();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
