/**
 * @module test/security/acp-client-writes-never-follow-a-path-swapped-after-the-check.test
 * `airlock acp` with the client's `fs/write_text_file` (src/tool/files.ts `writeText`): airlock resolves and
 * checks the real path, opens it without following links, then hands the *path string* to the editor and
 * closes its fd. The editor writes by path later, after a JSON-RPC round trip over the pipes.
 */
import { test } from "bun:test";

// Left as a todo: the fix is not small (the editor cannot be handed airlock's fd; it needs either a
// re-check of the real path's every component after the editor answers — which cannot undo a write —
// or refusing client writes under folders a confined process can rename, e.g. writing through the
// disk and only telling the editor to reload).
// Input: the model runs a background shell command in the workspace (workspace-write sandbox) that loops
// `mv ws/sub ws/sub.old; ln -s /outside ws/sub` while a subagent calls developer__write_file
// `sub/x.txt`. What happens: airlock checks `<ws>/sub/x.txt` (a real dir then), sends that path in
// fs/write_text_file; if the swap lands inside the round trip, the editor (which writes by path, following
// links, e.g. Zed's/Node's writeFile) writes `/outside/x.txt` — outside the workspace, or into the data dir
// (the data-dir refusal and `.git` protection are also checked only before the round trip). The window is
// the whole request round trip plus however long the editor takes (it may wait on a save dialog), not a
// few syscalls as on the disk path. Why it matters: workspace-write promises writes stay in the workspace;
// docs/acp.md step 3 says the checked real path goes to the editor, but not that the path may change after.
test.todo("a file tool's write through the editor never lands outside the workspace when a folder on its path is swapped for a symlink after the check");
