/**
 * @module test/security/floor-write-targets
 * The security floor judges a write target after the shell's own expansions (docs/security-model.md
 * §3.1): a glob, a `[…]` bracket or a brace sequence that reaches outside the workspace through a
 * symlink in it asks like the plain path would, and a target the floor cannot expand statically asks.
 * Downloads, unpacking, clones and patches name their targets too (`curl -o`, `wget -O`, `tar -C`,
 * `unzip -d`, `git clone DEST`, `patch -d`): under `danger-full-access` nothing else stops them. Each input is judged by the
 * real floor, run as root and as `nobody`, against a real workspace on disk.
 */
import { describe, expect, test } from "bun:test";
import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { sharedTempDir, testUsers } from "../as-user.ts";

const root = sharedTempDir("airlock-floor-writes-");
const ws = path.join(root, "ws");
const home = path.join(root, "home");
const out = path.join(root, "out"); // outside the workspace, not under a private /tmp for danger-full-access
mkdirSync(path.join(ws, "build"), { recursive: true });
mkdirSync(home);
mkdirSync(out);
writeFileSync(path.join(out, "f.txt"), "x");
writeFileSync(path.join(ws, "build", "a.o"), "x");
symlinkSync("/etc", path.join(ws, "etc")); // the workspace holds a link to a protected folder
symlinkSync(out, path.join(ws, "link")); // and one to a folder outside it

const BUN = process.execPath;
const JUDGE = path.join(import.meta.dir, "..", "fixtures", "floor-judge.ts");

/** The floor's findings for each command, judged by a process running as `prefix`'s user. */
function judge(prefix: string[], policy: string, commands: string[]): string[][] {
  const r = Bun.spawnSync([...prefix, BUN, JUDGE, JSON.stringify({ workspace: ws, home, policy, commands })], { stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`floor-judge failed: ${r.stderr.toString()}`);
  return JSON.parse(r.stdout.toString()) as string[][];
}

/** Expects every command to get at least one finding; the failure names those that did not. */
function expectAllAsk(prefix: string[], policy: string, commands: string[]): void {
  const got = judge(prefix, policy, commands);
  expect(commands.filter((_, i) => got[i]!.length === 0)).toEqual([]);
}

for (const user of testUsers()) {
  describe(`as ${user.name}: a write target gets the shell's expansions`, () => {
    test("a glob or bracket target that reaches a protected folder through a workspace link asks", () => {
      expectAllAsk(user.prefix, "workspace-write", [
        "echo x > e?c/passwd",
        "echo x >> e[t]c/hosts",
        "touch e*/passwd",
        "tee e[!x]c/hosts < /dev/null",
        "touch [e]tc/airlock-new",
        "cp payload e*/",
        "mv payload e*",
        "chmod 777 e*/passwd",
        "rm e*/hostname",
        "rm -rf e*/ssl",
        "sed -i s/a/b/ e*/hosts",
      ]);
    });

    test("a brace sequence, a too-large brace list and a pattern behind a variable ask", () => {
      const many = Array.from({ length: 70 }, (_, i) => `n${i}`).join(",");
      expectAllAsk(user.prefix, "workspace-write", ["touch e{r..u}c/passwd", `touch {${many},etc}/passwd`, "touch $DIR/*", "echo x > $DIR/*.txt"]);
    });

    test("a glob through a link to a folder outside the workspace asks under danger-full-access", () => {
      expectAllAsk(user.prefix, "danger-full-access", ["touch l*/f.txt", "echo x > l[i]nk/f.txt", "cp payload lin?/"]);
    });

    test("the same patterns inside the workspace, or quoted, stay allowed while the one through the link asks", () => {
      expectAllAsk(user.prefix, "workspace-write", ["rm -f e*/hostname"]);
      const commands = ["touch build/*.o", "rm -f build/*.o", "rm -rf build/*", "echo x > 'e*/passwd'", "echo x > build/{a,b}.txt"];
      expect(judge(user.prefix, "workspace-write", commands)).toEqual(commands.map(() => []));
    });
  });

  describe(`as ${user.name}: under danger-full-access, downloads, unpacking and clones outside the workspace ask`, () => {
    test.each([
      [`curl -o ${out}/x https://example.com/x`],
      [`curl -sSLo ${out}/x https://example.com/x`],
      [`curl --output=${out}/x https://example.com/x`],
      [`curl --output-dir ${out} -O https://example.com/x`],
      [`cd ${out} && curl -O https://example.com/x`],
      [`wget -O ${out}/x https://example.com/x`],
      [`wget -qP ${out} https://example.com/x`],
      [`tar -xzf a.tgz -C ${out}`],
      [`tar xzf a.tgz -C ${out}`],
      [`tar --directory=${out} -x -f a.tar`],
      [`tar -czf ${out}/a.tgz build`],
      ["tar -xPf a.tar"],
      [`unzip a.zip -d ${out}`],
      [`unzip -qd${out} a.zip`],
      [`git clone https://example.com/r.git ${out}/r`],
      [`git -C ${out} clone https://example.com/r.git`],
      [`git clone --depth 1 -b main https://example.com/r.git ${out}/r`],
      [`setsid curl -o ${out}/x https://example.com/x`],
      [`patch -d ${out} -p1 < fix.diff`],
      [`patch ${out}/f.txt fix.diff`],
      [`patch -o ${out}/f.txt -i fix.diff build/a.o`],
    ])("%s", (command) => {
      expectAllAsk(user.prefix, "danger-full-access", [command]);
    });

    test("the same commands writing inside the workspace stay allowed while the one outside asks", () => {
      expectAllAsk(user.prefix, "danger-full-access", [`tar xf a.tar -C ${out}`]);
      const commands = [
        "curl -o build/x https://example.com/x",
        "curl -O https://example.com/x",
        "wget -qO- https://example.com/x",
        "wget https://example.com/x",
        "tar xzf a.tgz",
        "tar -xf a.tar -C build",
        "tar -czf build/a.tgz build",
        "unzip a.zip",
        "unzip -l a.zip",
        "git clone https://example.com/r.git",
        "git clone https://example.com/r.git build/r",
        "patch -p1 < fix.diff",
        "patch -p1 -i fix.diff",
      ];
      expect(judge(user.prefix, "danger-full-access", commands)).toEqual(commands.map(() => []));
    });
  });
}
