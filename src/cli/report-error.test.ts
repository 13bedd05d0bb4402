/**
 * @module cli/report-error.test
 * The CLI's one error renderer and one table printer: `reportError` prints `airlock: <code>: <message>` on
 * stderr and returns the code's exit code from `EXIT_CODE` (every code, in a real subprocess), and `table`
 * lays out rows the way `sessions list`, `schedule list` and `schedule runs` print them.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ERROR_CODES, EXIT_CODE } from "../errors.ts";
import { table } from "./output.ts";

const dir = mkdtempSync(join(tmpdir(), "airlock-report-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs `source` with bun in a subprocess; its stdout, stderr and exit code. */
async function runScript(source: string): Promise<{ code: number; stdout: string; stderr: string }> {
  const file = join(dir, `s-${Math.random().toString(36).slice(2)}.ts`);
  writeFileSync(file, source);
  const p = Bun.spawn([process.execPath, file], { stdout: "pipe", stderr: "pipe", stdin: "ignore", env: { ...process.env, AIRLOCK_DEBUG: "" } });
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { code, stdout, stderr };
}

describe("cli/output.reportError", () => {
  test("every code: the line `airlock: <code>: <message>` on stderr, nothing on stdout, and the code's exit code", async () => {
    const output = JSON.stringify(join(import.meta.dir, "output.ts"));
    const errors = JSON.stringify(join(import.meta.dir, "..", "errors.ts"));
    const r = await runScript(`import { reportError } from ${output}; import { AirlockError, ERROR_CODES } from ${errors};
      const exits = {};
      for (const c of ERROR_CODES) exits[c] = reportError(new AirlockError(c, "the " + c + " message"));
      exits["(an Error)"] = reportError(new Error("boom"));
      process.exitCode = 0;
      require("node:fs").writeFileSync(${JSON.stringify(join(dir, "exits.json"))}, JSON.stringify(exits));`);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe("");
    expect(r.stderr).toBe(ERROR_CODES.map((c) => `airlock: ${c}: the ${c} message\n`).join("") + "airlock: internal: boom\n");
    const exits = JSON.parse(await Bun.file(join(dir, "exits.json")).text());
    expect(exits).toEqual({ ...EXIT_CODE, "(an Error)": 1 });
  });
});

describe("cli/output.table", () => {
  test("columns padded to the widest cell, two spaces apart, trailing spaces trimmed, cells shown with String", () => {
    const out = table(
      ["ID", "NAME", "NEXT"],
      [
        ["sch_1", "nightly", "-"],
        ["sch_22", null, 3],
        ["s", "a much longer name", ""],
      ],
    );
    expect(out).toBe(["ID      NAME                NEXT", "sch_1   nightly             -", "sch_22  null                3", "s       a much longer name"].join("\n") + "\n");
  });

  test("a header wider than every cell sets the width; a last column is never padded", () => {
    expect(table(["A", "LONG HEADER", "Z"], [["x", "y", "last"]])).toBe("A  LONG HEADER  Z\nx  y            last\n");
  });
});
