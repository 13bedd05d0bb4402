/** @module cli/version.test
 * `airlock version` outside a release build (the compiled release is tested in test/e2e/release.test.ts). */
import { expect, test } from "bun:test";
import pkg from "../../package.json" with { type: "json" };
import { embeddedBuild, versionInfo } from "./version.ts";

test("outside a release build, version --json names the package version and Bun, the build facts null", async () => {
  expect(embeddedBuild()).toBeUndefined();
  expect(await versionInfo()).toEqual({
    name: "airlock",
    version: pkg.version,
    commit: null,
    build_date: null,
    bun_version: Bun.version,
    target: null,
    file: null,
    bytes: null,
    sha256: null,
  });
});

test("`airlock version` prints one line and `--help` lists it", async () => {
  const run = async (args: string[]) => {
    const p = Bun.spawn([process.execPath, `${import.meta.dir}/../main.ts`, ...args], { stdout: "pipe", stderr: "pipe" });
    const [code, stdout] = await Promise.all([p.exited, new Response(p.stdout).text()]);
    return { code, stdout };
  };
  expect(await run(["version"])).toEqual({ code: 0, stdout: `airlock ${pkg.version} (development build, bun ${Bun.version})\n` });
  expect((await run(["--help"])).stdout).toMatch(/^ {2}version\b.*\S/m);
}, 60_000);
