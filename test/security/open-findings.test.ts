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

// Writes outside the workspace by commands the floor has no rule for (curl -o, wget -O, tar -x -C, unzip -d,
// git clone DEST, patch FILE, git config) are stopped by bwrap under workspace-write but are unguarded under
// danger-full-access.
test.todo("danger-full-access: curl -o / wget -O / tar -C / unzip -d / git clone outside the workspace ask");
