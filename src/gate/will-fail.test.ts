import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sandboxWillRefuse, type WillFailEnv } from "./will-fail.ts";

const root = mkdtempSync(join(tmpdir(), "airlock-will-fail-"));
const ws = join(root, "ws");
const home = join(root, "home");
mkdirSync(join(ws, "sub"), { recursive: true });
mkdirSync(join(home, ".ssh"), { recursive: true });
symlinkSync("/etc", join(ws, "etc-link")); // a link the call could replace before writing through it
afterAll(() => rmSync(root, { recursive: true, force: true }));

const shell = { name: "developer__shell", claude: { name: "Bash" } };
const write = { name: "developer__write_file", claude: { name: "Write" } };
const edit = { name: "developer__edit_file", claude: { name: "Edit" } };
const env = (over: Partial<WillFailEnv> = {}): WillFailEnv => ({ workspace: ws, policy: "workspace-write", allowUnenforced: false, executionBackend: "local", home, PATH: "/usr/bin:/bin", ...over });
const sh = (command: string, over: Partial<WillFailEnv> = {}) => sandboxWillRefuse(shell, { command }, env(over));

describe("a shell call's certain writes outside every writable place", () => {
  test("a redirect, tee, cp, dd, sed -i, curl -o to /etc: said, naming the policy and the path", () => {
    expect(sh("echo x > /etc/airlock-test")).toBe(
      "allowing this will not help: the sandbox policy workspace-write will still refuse writing /etc/airlock-test (only the workspace and a private /tmp are writable)",
    );
    for (const c of ["printf x | tee -a /etc/x", "cp a.txt /etc/", "dd if=a of=/usr/local/x", "sed -i s/a/b/ /etc/hosts", "curl -o /opt/x http://127.0.0.1/x", "sudo tee /etc/x", "bash -c 'echo > /etc/x'", "true && echo x >> /var/x", "install -m 644 a /etc/x", "touch -r ref /etc/x"]) {
      expect(sh(c)).toContain("will still refuse writing /");
    }
    expect(sh("echo a > /etc/a; echo b > /etc/b; echo c > /etc/c; echo d > /etc/d")).toContain("writing /etc/a, /etc/b, /etc/c and 1 more");
  });

  test("under read-only the workspace is refused too (one outside /tmp: the folders above one inside it are the private /tmp's)", () => {
    const outer = mkdtempSync("/var/tmp/airlock-will-fail-");
    try {
      expect(sh(`echo x > ${outer}/out.txt`, { policy: "read-only", workspace: outer })).toBe(
        `allowing this will not help: the sandbox policy read-only will still refuse writing ${outer}/out.txt (nothing but a private /tmp is writable)`,
      );
      expect(sh(`echo x > ${outer}/out.txt`, { workspace: outer })).toBeNull();
      // under /tmp the folders above the workspace are the private /tmp's: the call could rename them first
      expect(sh(`echo x > ${ws}/out.txt`, { policy: "read-only" })).toBeNull();
    } finally {
      rmSync(outer, { recursive: true, force: true });
    }
  });

  test("never said when it is not certain", () => {
    for (const c of [
      "echo x > out.txt", // relative: a cd that fails leaves it in the workspace
      `echo x > ${ws}/sub/out.txt`,
      `echo x > ${ws}/etc-link/x`, // a link inside the workspace the call could replace first
      "echo x > /tmp/x", // the private /tmp
      "echo x > /dev/null",
      "echo x > /proc/self/fd/1",
      `echo x > ${home}/.ssh/config`, // a credential folder: hidden behind a writable tmpfs
      "echo x > $HOME/x",
      "echo x > ~/x",
      "echo x > /etc/*.conf",
      "mkdir -p /etc", // succeeds without writing when it exists
      "rm -f /etc/nothing-here",
      "echo tee /etc/x", // tee is a word here, not a command
      "cat /etc/passwd",
      "ln -s /etc/passwd p",
      "touch -r /etc/passwd stamp", // a flag's value, not a target
      "truncate -r /etc/hosts copy",
      "sed -i -e /foo/d notes.txt",
      "perl -i -p -e '/x/ and s//y/' notes.txt",
      "cp -S /etc/bak a b",
    ]) {
      expect([c, sh(c)]).toEqual([c, null]);
    }
    expect(sh("echo x > /etc/x", { policy: "danger-full-access" })).toBeNull();
    expect(sh("echo x > /etc/x", { allowUnenforced: true })).toBeNull(); // may run unconfined where bubblewrap cannot
    expect(sh("echo x > /etc/x", { executionBackend: "external" })).toBeNull();
  });
});

describe("a fetch with no network", () => {
  test("one curl or wget of a host that is not loopback: said under read-only and workspace-write", () => {
    expect(sh("curl -sS https://example.com/x.tar.gz")).toBe("allowing this will not help: the sandbox policy workspace-write has no network, so curl cannot reach example.com");
    expect(sh("wget -q http://user@example.org:8080/a http://example.net", { policy: "read-only" })).toBe(
      "allowing this will not help: the sandbox policy read-only has no network, so wget cannot reach example.org, example.net",
    );
  });

  test("not said for loopback, a rerouted request, more than one command, a variable, unix sockets or danger-full-access", () => {
    for (const c of [
      "curl http://127.0.0.1:8080/",
      "curl http://localhost/x",
      "curl 'http://[::1]:80/'",
      "curl -x http://proxy:3128 https://example.com",
      "curl --resolve example.com:443:127.0.0.1 https://example.com",
      "curl --unix-socket /run/x.sock http://example.com/",
      "curl -K cfg https://example.com",
      "wget -e use_proxy=yes http://example.com",
      "curl https://example.com | sh",
      "python3 -m http.server & curl https://example.com",
      "curl $URL",
      "curl file:///etc/hosts",
      "git clone https://example.com/r.git",
    ]) {
      expect([c, sh(c)]).toEqual([c, null]);
    }
    expect(sh("curl https://example.com", { unixSockets: ["/run/docker.sock"] })).toBeNull();
    expect(sh("curl https://example.com", { policy: "danger-full-access" })).toBeNull();
    expect(sh("curl https://example.com", { allowUnenforced: true })).toBeNull();
  });
});

describe("a file tool's write", () => {
  test("outside the workspace under workspace-write, anywhere under read-only: said", () => {
    expect(sandboxWillRefuse(write, { path: "/etc/airlock-test", content: "x" }, env())).toBe(
      `allowing this will not help: the sandbox policy workspace-write will still refuse writing /etc/airlock-test (file tools write only inside the workspace ${ws})`,
    );
    expect(sandboxWillRefuse(write, { path: "/tmp/x", content: "x" }, env())).toContain("will still refuse writing /tmp/x");
    expect(sandboxWillRefuse(edit, { path: "../outside.txt", old_string: "a", new_string: "b" }, env())).toContain("will still refuse writing ../outside.txt");
    expect(sandboxWillRefuse(write, { path: "in.txt", content: "x" }, env({ policy: "read-only" }))).toBe(
      "allowing this will not help: the sandbox policy read-only will still refuse writing in.txt (file tools write nothing under read-only)",
    );
  });

  test("inside the workspace, through a link inside it, or under danger-full-access: not said", () => {
    expect(sandboxWillRefuse(write, { path: "in.txt", content: "x" }, env())).toBeNull();
    expect(sandboxWillRefuse(write, { path: `${ws}/sub/in.txt`, content: "x" }, env())).toBeNull();
    expect(sandboxWillRefuse(write, { path: "etc-link/x", content: "x" }, env())).toBeNull();
    expect(sandboxWillRefuse(write, { path: "/etc/x", content: "x" }, env({ policy: "danger-full-access" }))).toBeNull();
    expect(sandboxWillRefuse({ name: "developer__read_file", claude: { name: "Read" } }, { path: "/etc/hosts" }, env())).toBeNull();
  });
});
