import { afterAll, describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { closeSync, mkdirSync, mkdtempSync, openSync, rmSync, symlinkSync, writeFileSync, ftruncateSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BIND_CHUNK_BYTES, BIND_MAX_BYTES, bindFiles, changedFiles } from "./bound-files.ts";
import { namedFiles } from "../gate/named-files.ts";

const ws = mkdtempSync(join(tmpdir(), "airlock-bound-"));
afterAll(() => rmSync(ws, { recursive: true, force: true }));

const shell = (command: string) => namedFiles({ name: "developer__shell" }, { command }, ws).map((f) => f.rel);

describe("namedFiles", () => {
  test.each([
    ["sh script.sh", ["script.sh"]],
    ["bash -e ./a.sh arg", ["a.sh"]],
    ["./run.sh --flag", ["run.sh"]],
    ["scripts/build.sh", ["scripts/build.sh"]],
    ["source env.sh && . ./more.sh", ["env.sh", "more.sh"]],
    ["python3 -u x.py a b", ["x.py"]],
    ["python3 -W ignore tool.py", ["tool.py"]],
    ["node -r dotenv/config app.js", ["app.js"]],
    ["bun run x.ts", ["x.ts"]],
    ["perl -w s.pl; ruby r.rb", ["s.pl", "r.rb"]],
    ["env FOO=1 timeout 5 nice -n 3 sh x.sh", ["x.sh"]],
    ["FOO=1 bash x.sh", ["x.sh"]],
    ["bash -c 'sh inner.sh' && sh -- outer.sh", ["inner.sh", "outer.sh"]],
    ["bash < stdin.sh", ["stdin.sh"]],
    ["cd sub && sh y.sh", ["sub/y.sh"]],
    ["sh x.sh; sh x.sh", ["x.sh"]],
    ["echo $(sh sub.sh)", ["sub.sh"]],
    // `-m` looks in the cwd first: a workspace package of that name (which wins) or module would run
    ["python3 -m http.server", ["http/server.py", "http/server/__main__.py"]],
  ])("%p names %p", (command, files) => {
    expect(shell(command)).toEqual(files);
  });

  test.each([
    "python3 -c 'print(1)'",
    "node -e 'console.log(1)'",
    "perl -e 'print 1'",
    "sh $SCRIPT",
    "sh *.sh",
    "sh ~/x.sh",
    "sh /etc/profile",
    "sh ../outside.sh",
    "cd $DIR && sh y.sh",
    "ls -la; cat x.sh",
    "bash 'unbalanced",
  ])("%p names no workspace file", (command) => {
    expect(shell(command)).toEqual([]);
  });

  test("a write or edit names its target (airlock's and Claude Code's argument names); a read names nothing", () => {
    expect(namedFiles({ name: "developer__write_file" }, { path: "a/b.txt", content: "" }, ws)).toEqual([{ rel: "a/b.txt", abs: join(ws, "a/b.txt") }]);
    expect(namedFiles({ name: "developer__edit_file" }, { path: join(ws, "c.txt"), old_string: "a", new_string: "b" }, ws).map((f) => f.rel)).toEqual(["c.txt"]);
    expect(namedFiles({ name: "x__write", claude: { name: "Write" } }, { file_path: "d.txt" }, ws).map((f) => f.rel)).toEqual(["d.txt"]);
    expect(namedFiles({ name: "developer__read_file" }, { path: "a.txt" }, ws)).toEqual([]);
    expect(namedFiles({ name: "interpreter__python" }, { code: "print(1)" }, ws)).toEqual([]);
  });
});

describe("bindFiles", () => {
  const sha = (b: string | Buffer) => createHash("sha256").update(b).digest("hex");

  test("regular, missing, symlinked and FIFO files (a FIFO is never opened, so nothing blocks)", async () => {
    writeFileSync(join(ws, "r.sh"), "echo r\n");
    symlinkSync("r.sh", join(ws, "l.sh"));
    const mk = Bun.spawnSync(["mkfifo", join(ws, "fifo")]);
    expect(mk.exitCode).toBe(0);
    mkdirSync(join(ws, "dir"));
    const named = namedFiles({ name: "developer__shell" }, { command: "sh r.sh; sh gone.sh; sh l.sh; sh fifo; sh dir" }, ws);
    expect(await bindFiles(named, ws)).toEqual([
      { path: "r.sh", kind: "file", size: 7, sha256: sha("echo r\n") },
      { path: "gone.sh", kind: "missing" },
      { path: "l.sh", kind: "symlink", link: "r.sh", size: 7, sha256: sha("echo r\n") },
      { path: "fifo", kind: "other" },
      { path: "dir", kind: "other" },
    ]);
  });

  test("a big file is hashed in chunks while the event loop keeps turning; one over the limit is too_large and not read", async () => {
    const big = join(ws, "big.bin");
    const fd = openSync(big, "w");
    ftruncateSync(fd, 24 * BIND_CHUNK_BYTES); // sparse: reads as zeros
    closeSync(fd);
    let turns = 0;
    let spinning = true;
    const spin = () => {
      turns++;
      if (spinning) setImmediate(spin);
    };
    setImmediate(spin);
    const [b] = await bindFiles([{ rel: "big.bin", abs: big }], ws);
    spinning = false;
    expect(b).toEqual({ path: "big.bin", kind: "file", size: 24 * BIND_CHUNK_BYTES, sha256: sha(Buffer.alloc(24 * BIND_CHUNK_BYTES)) });
    expect(turns).toBeGreaterThan(1);

    const huge = join(ws, "huge.bin");
    const hfd = openSync(huge, "w");
    ftruncateSync(hfd, BIND_MAX_BYTES + 1);
    closeSync(hfd);
    expect(await bindFiles([{ rel: "huge.bin", abs: huge }], ws)).toEqual([{ path: "huge.bin", kind: "too_large", size: BIND_MAX_BYTES + 1 }]);
  });

  test("an aborted signal stops hashing", async () => {
    writeFileSync(join(ws, "s.sh"), "x");
    await expect(bindFiles([{ rel: "s.sh", abs: join(ws, "s.sh") }], ws, AbortSignal.abort())).rejects.toThrow();
  });
});

describe("changedFiles", () => {
  test("lists each binding that differs, by position, in words", () => {
    const a = [
      { path: "x.sh", kind: "file" as const, size: 1, sha256: "a".repeat(64) },
      { path: "y.sh", kind: "missing" as const },
    ];
    expect(changedFiles(a, a)).toEqual([]);
    expect(changedFiles(a, [a[0]!, { path: "y.sh", kind: "symlink", link: "/etc/passwd" }])).toEqual(["y.sh: missing → symlink → /etc/passwd"]);
    expect(changedFiles(a, [{ ...a[0]!, sha256: "b".repeat(64) }, a[1]!])).toEqual([`x.sh: sha256 ${"a".repeat(12)}… (1 bytes) → sha256 ${"b".repeat(12)}… (1 bytes)`]);
  });
});
