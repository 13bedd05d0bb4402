/**
 * @module test/e2e/release-reproducible.test
 * `npm run release` (build/release.ts) is reproducible: a second release build of the same commit, made in
 * this file from scratch (its own help texts, side bundles and compiles), gives the same bytes as the run's
 * shared release (test/harness-release.ts, checked by release.test.ts) for every artifact, install.sh,
 * SHA256SUMS and release.json. Its own file so the two builds run on the two workers at once.
 */
import { expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { buildRelease, sharedRelease } from "../harness-release.ts";

const FILES = ["airlock-linux-x64", "airlock-linux-arm64", "airlock-linux-x64-musl", "install.sh", "SHA256SUMS", "release.json"];
const sha256 = (path: string) => createHash("sha256").update(readFileSync(path)).digest("hex");

test("a second release build of the same commit gives identical bytes", async () => {
  const [second, first] = await Promise.all([buildRelease(), sharedRelease()]);
  expect(readdirSync(second).sort()).toEqual([...FILES].sort());
  for (const f of FILES) {
    expect({ f, sha256: sha256(join(second, f)) }).toEqual({ f, sha256: sha256(join(first, f)) });
  }
}, 900_000);
