/**
 * @module test/security/open-findings
 * Findings of the adversarial review that need a design decision rather than a small fix; each is
 * described precisely here (and in the review report) and kept out of the suite as `test.todo`.
 */
import { test } from "bun:test";

// workspace-write, workspace WITHOUT .git: `mkdir -p .git/hooks && echo … > .git/hooks/pre-commit` (from
// interpreter__python, which the floor does not read, or `git init && git config core.fsmonitor …`) succeeds
// inside bwrap, because the launcher protects .git/hooks and .git/config only when they exist. The user's next
// git command in that folder runs the planted code unconfined. Fixing it means either refusing to create `.git`
// at a writable root (a mount on a path that does not exist would leave a stray `.git` on the host) or a
// post-call check of a freshly created `.git` — a launcher design choice.
test.todo("workspace-write without .git: a confined process cannot plant .git/hooks or .git/config");

// interpreter__python / interpreter__js (and `python3 -c …`, `perl -e …`, `awk 'BEGIN{system(…)}'` inside
// developer__shell) have no floor rule by design (docs/security-model.md §3.1). Under read-only and
// workspace-write the whole filesystem stays readable, so `open(os.path.expanduser('~/.ssh/id_rsa')).read()`
// returns the key to the model in autonomous mode without a card, while `cat ~/.ssh/id_rsa` asks with user proof.
// Closing it needs the sandbox to hide credential paths (~/.ssh, ~/.aws, ~/.netrc, …) like the data dir now is.
test.todo("interpreter code cannot read ~/.ssh/id_* or ~/.aws/credentials under a confined policy");

// Writes outside the workspace by commands the floor has no rule for (curl -o, wget -O, tar -x -C, unzip -d,
// git clone DEST, patch FILE, git config) are stopped by bwrap under workspace-write but are unguarded under
// danger-full-access.
test.todo("danger-full-access: curl -o / wget -O / tar -C / unzip -d / git clone outside the workspace ask");
