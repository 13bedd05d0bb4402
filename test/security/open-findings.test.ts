/**
 * @module test/security/open-findings
 * Findings of the adversarial review that need a design decision rather than a small fix; each is
 * described precisely here (and in the review report) and kept out of the suite as `test.todo`.
 */
import { test } from "bun:test";

// Fixed since the review, tested in test/security/workspace-protection.test.ts: a root that is not a
// repository gets a locked `.git`; credential folders/files under HOME are hidden from confined processes.
// A repository planted in a subfolder (`git init sub`) is quarantined after the call:
// test/security/repository-metadata.test.ts.

// Writes outside the workspace by `curl -o`, `wget -O`, `tar -C`, `unzip -d`, `git clone DEST` and `patch` are
// judged by the floor now (test/security/floor-write-targets.test.ts). Still open under danger-full-access:
// `git config --global`/`--file` name no target the floor reads.
