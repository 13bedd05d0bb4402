/**
 * @module test/security/floor-path-listing
 * Past 32 command words a judgement lists PATH folders (`PathListing`) instead of a `stat` per folder. A
 * listing holds names as decoded text, a lookup is by the name's bytes: a model's JSON can spell a command
 * word with a lone surrogate (`"\ud800"`), which Bun (and so bash, and `stat`) encodes as U+FFFD's bytes.
 * A folder's listing answered "not here" for it, so a `\ud800` linked to rm was judged as an unknown word
 * (`rm -rf ~` allowed) once the command named 32 other words. Real bash runs the planted link here.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync, chmodSync, readdirSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { judgeCall, type FloorEnv } from "../../src/gate/inspectors/security-floor.ts";

const root = mkdtempSync(path.join(os.tmpdir(), "airlock-floor-listing-"));
const ws = path.join(root, "ws");
const bin = path.join(root, "bin");
mkdirSync(ws);
mkdirSync(bin);
afterAll(() => rmSync(root, { recursive: true, force: true }));
const env: FloorEnv = { workspace: ws, policy: "workspace-write", home: path.join(root, "home"), PATH: `${bin}:${process.env.PATH}` };
const LONE = "\ud800";
const filler = Array.from({ length: 40 }, (_, i) => `w${i}`).join(" ");

describe("a PATH folder's listing", () => {
  test("finds a command word spelled with a lone surrogate as bash runs it (U+FFFD's bytes)", () => {
    // a planted link whose name is U+FFFD: bash runs it for the word `\ud800` (a marker script, not rm)
    const marker = path.join(root, "ran");
    const script = path.join(root, "fake-rm");
    writeFileSync(script, `#!/bin/sh\necho "$@" > ${marker}\n`);
    chmodSync(script, 0o755);
    symlinkSync(script, path.join(bin, "\ufffd"));
    expect(readdirSync(bin)).toEqual(["\ufffd"]);
    const ran = Bun.spawnSync(["bash", "-c", `${LONE} -rf ~`], { env: { PATH: env.PATH!, HOME: env.home! } });
    expect(ran.exitCode).toBe(0);
    expect(readdirSync(root)).toContain("ran");
    rmSync(path.join(bin, "\ufffd"));
    symlinkSync("/bin/rm", path.join(bin, "\ufffd"));
    // a few words: a stat per folder finds it (rm)
    expect(judgeCall({ kind: "shell", command: `${LONE} -rf ~` }, env).join("\n")).toContain("recursive delete of broad target ~");
    // past 32 command words the folders are listed: still rm
    expect(judgeCall({ kind: "shell", command: `echo ${filler}; ${LONE} -rf ~` }, env).join("\n")).toContain("recursive delete of broad target ~");
  });
});
