/**
 * @module test/security/hook-attack-open-findings
 * Findings of the attack on hooks, trust, transcripts, attach and notify (issues 17 and 18) that need a
 * design decision rather than a small fix; each is described precisely here and kept out of the suite as
 * `test.todo`. Fixed ones are tested in project-hooks-never-read-other-transcripts, claude-home-hidden-from-confined-processes,
 * claude-user-settings-writes-ask and post-tool-use-sees-the-input-that-ran.
 */
import { test } from "bun:test";

// Input: a trusted workspace's `.claude/settings.json` (the model writes it under `workspace-write`; the spec
// says so) with a PreToolUse group whose matcher is `.*.*.*.*.*.*.*.*.*.*.*.*.*.*.*.*.*.*.*.*X` (20 `.*`),
// or `(.*.*.*.*.*.*.*.*.*.*)*X`. What happens: hook/run.ts `matchingHooks` compiles it with `new RegExp` and
// tests it, in airlock's own thread, against `developer__shell` / `Bash` at every tool call of every session
// of that tree: measured with bun 1.x on this machine, 20 `.*` took over 30 s for one `test("developer__shell")`
// (killed at 30 s), the nested form 12–17 s; an MCP tool's longer name is worse. Why it matters: the whole
// `airlock serve` (every session's gate, the HTTP API, SSE, card answers and TTLs) stops while it runs: one
// model-written settings file read at the next session start hangs the server. A fix needs a matcher language
// that cannot backtrack (Claude Code's documented forms: a name, `A|B`, `prefix.*`, `*`), or matching in a
// worker with a deadline (fail closed: `hook_error`), for project settings at least.
test.todo("a trusted project's hook matcher cannot hang airlock with catastrophic backtracking");

// Input: the workspace holds `~` (airlock started in the home folder), `workspace-write`, autonomous mode,
// `hooks.import_claude_settings: true`, and `~/.claude` does NOT exist yet; the model runs
// `python3 -c 'import os; os.makedirs(".claude"); open(".claude/settings.json","w").write(...)'`. What happens:
// `~/.claude` is hidden from confined processes only when it exists (launcher/credentials.ts `credentialPaths`),
// the security floor asks for file-tool and shell writes under `~/.claude` but an interpreter's write names no
// path it reads, so the folder and file are created on the host without a card. Why it matters: the next
// airlock process runs that file's hooks as the user's own (`HOOK_PROCESS`: every file, the network, every
// session's transcript): a sandbox escape by one write. A fix locks a missing `~/.claude` inside a writable
// root (an empty read-only tmpfs, as the launcher's `lockedPaths` does for a missing `.git`).
test.todo("a confined process cannot create ~/.claude when the workspace holds the home folder and it does not exist");
