/**
 * The security floor and the card's file binding know the same shells and wrappers
 * (src/shell/command-words.ts). Before they shared one list, the floor did not know `fish` or
 * `mksh`, so `fish -c 'rm -rf ~'` was allowed without a card, while the binding treated both as shells.
 */
import { describe, expect, test } from "bun:test";
import { SHELLS, WRAPPERS } from "../../src/shell/command-words.ts";
import { securityFloor } from "../../src/gate/inspectors/security-floor.ts";
import { namedFiles } from "../../src/gate/named-files.ts";

const env = { workspace: "/srv/ws", policy: "workspace-write" as const, home: "/home/u", PATH: "/usr/bin:/bin" };
const shell = (command: string) => securityFloor({ name: "developer__shell" }, { command }, env);

describe("every shell the floor knows", () => {
  for (const sh of SHELLS) {
    test(`${sh} -c 'rm -rf ~' asks (the -c string is judged)`, () => {
      expect(shell(`${sh} -c 'rm -rf ~'`)).toMatchObject({ kind: "ask", inspector: "sensitive_ops" });
    });
    test(`${sh} x.sh binds x.sh to the card`, () => {
      expect(namedFiles({ name: "developer__shell" }, { command: `${sh} x.sh` }, env.workspace).map((f) => f.rel)).toEqual(["x.sh"]);
    });
  }
  for (const w of [...WRAPPERS].filter((x) => !["command", "builtin", "exec", "chroot", "busybox", "xargs"].includes(x))) {
    test(`${w} in front hides nothing: ${w} rm -rf ~ asks`, () => {
      expect(shell(`${w} rm -rf ~`)).toMatchObject({ kind: "ask" });
    });
  }
});
