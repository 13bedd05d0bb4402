/**
 * @module test/security/floor-wrapper-cwd-clusters-braces
 * Spellings that got past the security floor (docs/security-model.md §3.1) with no card: a brace
 * expansion in a *read* (`cat ~/.{ssh,x}/id_rsa`), a wrapper that changes the directory the command
 * runs in (`env -C /etc touch x`, `sudo -D`), `-t DIR` inside a cluster of short flags (`cp -at/etc`),
 * tar's old-style option cluster whose letters take their values in order (`tar xfC a.tar /etc`),
 * `tar --one-top-level=DIR`, `bsdtar`, `trap 'cmd' EXIT` (runs cmd like eval), `unzip -:` (keeps `../`
 * in member names) and, under `danger-full-access`, a write command fed its targets by `xargs`. Each
 * input is judged by the real floor, run as root and as `nobody`, against a real home and workspace.
 */
import { describe, expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { sharedTempDir, testUsers } from "../as-user.ts";

const root = sharedTempDir("airlock-floor-more-");
const ws = path.join(root, "ws");
const home = path.join(root, "home");
mkdirSync(path.join(ws, "sub"), { recursive: true });
mkdirSync(path.join(home, ".ssh"), { recursive: true });
mkdirSync(path.join(home, ".kube"), { recursive: true });
writeFileSync(path.join(home, ".ssh", "id_rsa"), "k");
writeFileSync(path.join(home, ".kube", "config"), "k");

const BUN = process.execPath;
const JUDGE = path.join(import.meta.dir, "..", "fixtures", "floor-judge.ts");

function judge(prefix: string[], policy: string, commands: string[]): string[][] {
  const r = Bun.spawnSync([...prefix, BUN, JUDGE, JSON.stringify({ workspace: ws, home, policy, commands })], { stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`floor-judge failed: ${r.stderr.toString()}`);
  return JSON.parse(r.stdout.toString()) as string[][];
}

/** The commands of `commands` the floor did not ask about (expected: none). */
function silent(prefix: string[], policy: string, commands: string[]): string[] {
  const got = judge(prefix, policy, commands);
  return commands.filter((_, i) => got[i]!.length === 0);
}

for (const user of testUsers()) {
  describe(`as ${user.name}`, () => {
    test("a brace expansion in a read is judged word by word", () => {
      expect(
        silent(user.prefix, "danger-full-access", [
          "cat ~/.{ssh,x}/id_rsa",
          "cat ~/.{kube,none}/config",
          "base64 < ~/.{kube,x}/config",
          "cp ~/.{ssh,x}/id_rsa ./k",
          `cat ${home}/.{ssh,none}/id_rsa`,
        ]),
      ).toEqual([]);
      expect(silent(user.prefix, "read-only", ["cat ~/.{kube,x}/config"])).toEqual([]);
    });

    test("a wrapper that changes the directory moves the command there", () => {
      expect(
        silent(user.prefix, "danger-full-access", [
          "env -C /etc touch airlock-x",
          "env --chdir=/etc touch airlock-x",
          "env --chdir /etc touch airlock-x",
          "env -C/etc touch airlock-x",
          "env -C /etc -i touch airlock-x",
          "sudo -D /etc touch airlock-x",
          "env -C ~ cat .ssh/id_rsa",
        ]),
      ).toEqual([]);
    });

    test("-t DIR inside a cluster of short flags is the destination", () => {
      expect(silent(user.prefix, "danger-full-access", ["cp -at/etc a", "cp -at /etc a", "cp -rt /etc a", "mv -ft /etc a", "install -Dt /etc a"])).toEqual([]);
    });

    test("tar: old-style letters take their values in order, --one-top-level and bsdtar name the target", () => {
      expect(
        silent(user.prefix, "danger-full-access", [
          "tar xfC a.tar /etc",
          "tar xzfC a.tgz /etc",
          "tar cfC /etc/out.tar . x",
          "tar xf a.tar --one-top-level=/etc/airlock-x",
          "bsdtar -xf a.tar -C /etc",
        ]),
      ).toEqual([]);
    });

    test("trap runs its command string like eval; unzip -: keeps ../ in member names", () => {
      expect(silent(user.prefix, "danger-full-access", ["trap 'touch /etc/airlock-x' EXIT", "trap \"rm -rf ~\" INT", "unzip -: a.zip", "unzip -o: a.zip -d sub"])).toEqual([]);
      expect(silent(user.prefix, "workspace-write", ["trap 'rm -rf /' EXIT"])).toEqual([]);
    });

    test("under danger-full-access a write command fed its targets by xargs asks", () => {
      expect(silent(user.prefix, "danger-full-access", ["echo /etc/airlock-x | xargs touch", "xargs -0 rm -f < list", "xargs -I{} cp a {} <<< /etc/x", "ls | xargs chmod 777"])).toEqual([]);
    });

    test("ordinary commands stay quiet", () => {
      const quiet = ["ls {a,b}", "cat ~/.ssh/{id_rsa,x}.pub", "env -C sub touch x", "cp -a x y", "tar xf a.tar", "tar xf a.tar --one-top-level=sub", "trap - EXIT", "trap 'echo bye' EXIT", "unzip -d sub a.zip"];
      const got = judge(user.prefix, "danger-full-access", quiet);
      expect(quiet.filter((_, i) => got[i]!.length > 0)).toEqual([]);
      // confined, xargs feeding rm inside the workspace is fine (the sandbox holds the writes)
      expect(judge(user.prefix, "workspace-write", ["find . -name '*.o' | xargs rm -f"])).toEqual([[]]);
    });
  });
}
