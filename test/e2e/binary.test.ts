/**
 * @module test/e2e/binary.test
 * The compiled binary copied alone into an empty folder: `--version` prints package.json's version,
 * and its embedded sandbox worker (tinypool entry shim + QuickJS) runs a script through `__script-exec`.
 */
import { expect, test } from "bun:test";
import pkg from "../../package.json" with { type: "json" };
import { compiledBinary, runBinary } from "../harness-binary.ts";

test("binary --version prints the package.json version", async () => {
  const bin = await compiledBinary();
  const r = await runBinary(bin, ["--version"]);
  expect(r).toMatchObject({ code: 0, stdout: `${pkg.version}\n` });
}, 120_000);

test("binary runs a script on its embedded sandbox worker", async () => {
  const bin = await compiledBinary();
  const r = await runBinary(bin, ["__script-exec"], "console.log('hello'); return { sum: 1 + 2, echoed: await tools.echo({ x: 1 }) };");
  expect(r.code).toBe(0);
  expect(JSON.parse(r.stdout)).toEqual({ ok: true, value: { sum: 3, echoed: { x: 1 } }, logs: ["hello"], calls: 1 });
}, 120_000);
