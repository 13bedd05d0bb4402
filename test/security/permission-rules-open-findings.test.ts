/**
 * @module test/security/permission-rules-open-findings
 * Findings of the adversarial review of permission rules, read-only shell commands and session rules
 * (issue 16) that need a design decision rather than a small fix. Each is described precisely and kept
 * out of the suite as `test.todo`. Fixed ones are tested in project-settings-never-loosen, session-rules-name-what-the-card-showed, shell-allows-match-what-bash-runs,
 * deny-rules-see-through-paths-and-wrapper-options and session-suggestions-never-cover-other-programs.
 */
import { describe, test } from "bun:test";

describe("known read-only commands never print what the floor would ask about", () => {
  // Input: smart mode, a repository whose history holds `.env` (committed by mistake). `git show HEAD:.env`
  // and `git log -p` print its content without a card, while `cat .env` and `git log -p -- .env` ask
  // (securityFloor: `git show HEAD:.env` → allow, no path the floor reads: the `REV:path` operand names
  // none). The sandbox's credential masks hide the working-tree file, not git's objects. Fix: the floor
  // reads `REV:PATH` operands of git show/log/diff as reads of PATH; `git log -p` with no path is harder.
  test.todo("git show HEAD:.env asks as cat .env does");
});

describe("deny and ask shell rules hit every spelling of their program", () => {
  // Still missed by `Bash(git push:*)` / `Bash(rm:*)` in deny (each runs the denied program; allow Bash or
  // autonomous mode then runs it): git's global options before the subcommand (`git -C . push`,
  // `git -c a=b push`, `git --no-pager push`); a shell fed on stdin (`echo 'rm x' | bash`,
  // `bash <<< 'rm x'`, `. /dev/stdin <<< 'rm x'`, `source <(echo rm x)`); a variable as the program
  // (`x=rm; $x y`, `IFS=,; c=rm,x; $c`); programs that run the command after them and are not in
  // shell/command-words.ts WRAPPERS (`watch`, `flock F`, `strace`, `taskset 1`, `unshare`, `fakeroot`,
  // `chrt 1`, `parallel rm ::: x`, `find . -exec rm {} +`). Deny rules on the shell are best effort (as in
  // Claude Code); the mode's ask is the wall. A complete answer would deny what the parser cannot pin down
  // when a deny rule exists (a variable or stdin-fed shell as the program), and strip git's global options.
  test.todo("Bash(git push:*) in deny refuses `git -C . push` and `echo 'git push' | bash`");
});

describe("the floor sees files a command reads through its own language", () => {
  // Input: danger-full-access (no masks), autonomous mode or an allow rule `Bash(jq:*)`:
  // `jq -n 'import "config" as $c {search: "~/.docker"}; $c'` prints ~/.docker/config.json with no
  // card, while `cat ~/.docker/config.json` and `jq . ~/.docker/config.json` are the floor's asks
  // (securityFloor → allow: no word names the file). Smart mode now asks (jq with import/include is not
  // read-only: test/security/read-only-jq-never-imports-files.test.ts), but the floor itself misses it.
  // Fix: the floor reads `search` paths of a jq program, or treats jq `import`/`include` as unjudgeable.
  test.todo("the floor asks before jq imports a credential file");
});
