/**
 * @module test/tools-dir
 * PATH folders for the installer tests (scripts/install.sh): every `/usr/bin` tool linked in but
 * `without`, and fake `uname` / `ldd` when asked (the machine the installer believes it is on). One
 * folder per set of options per test file: the tests only read them, and making one costs ~1,100
 * symlinks (0.7-2.2 s at load 13 on this disk; the installer files made 16-20 each before).
 */
import { readdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { sharedTempDir } from "./as-user.ts";

/** What a tools folder leaves out or fakes. */
export interface ToolsOptions {
  /** A `/usr/bin` tool left out (`curl`, `wget`). */
  without?: string;
  /** What the fake `uname -m` says (other `uname` arguments go to the real one). */
  machine?: string;
  /** A fake `ldd` that says musl, as Alpine's does. */
  musl?: boolean;
}

const made = new Map<string, string>();

/**
 * The folder for `opts` (made on first use, every test user may read it; removed after the file's
 * tests, test/cleanup.ts). Callers must not write into it: it is shared by the file's tests.
 */
export function toolsDir(opts: ToolsOptions = {}): string {
  const key = JSON.stringify([opts.without ?? null, opts.machine ?? null, opts.musl ?? false]);
  const known = made.get(key);
  if (known) return known;
  const dir = sharedTempDir("airlock-tools-");
  for (const name of readdirSync("/usr/bin")) {
    if (name === opts.without || (opts.machine && name === "uname") || (opts.musl && name === "ldd")) continue;
    symlinkSync(join("/usr/bin", name), join(dir, name));
  }
  if (opts.machine) {
    writeFileSync(join(dir, "uname"), `#!/bin/sh\ncase "$1" in -m) echo ${opts.machine} ;; *) exec /usr/bin/uname "$@" ;; esac\n`, { mode: 0o755 });
  }
  if (opts.musl) writeFileSync(join(dir, "ldd"), "#!/bin/sh\necho 'musl libc (x86_64)' >&2\nexit 1\n", { mode: 0o755 });
  made.set(key, dir);
  return dir;
}
