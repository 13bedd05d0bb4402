/**
 * @module test/security/broad-workspace-and-danger-reads
 * Holes found by attacking issue 12's walls that need a design decision rather than a small fix. Each is
 * described precisely (input, what happens, why it matters) and kept out of the suite as `test.todo`.
 */
import { test } from "bun:test";

// `POST /sessions {"workspace":"/"}` (or `airlock run` started in `/`, as in a container with no WORKDIR),
// policy `workspace-write`: the launcher binds `/` read-write, so the sandbox writes anywhere on the host; the
// repository-metadata scan walks the whole filesystem (~16 s per call on this machine, twice per call); the
// post-call scan renames to `*.airlock-quarantine-*` every `.git` another process created anywhere on the
// host while the call ran (other users' `git init`/`git clone`, other test runs under /tmp); and the host's
// /dev comes back `nodev`, so the lifeline watchdog fails ("airlock-lifeline: cannot open /dev/null") and
// the tree loses its kill -9 guarantee. A workspace equal to HOME has the quarantine half of this (a
// `git clone` the user runs in another folder of HOME during a call is renamed). Refusing `/` would break
// `airlock run` from cwd `/`; needs a decision (refuse `/` under workspace-write, or scan only what the
// confined process could have written).
test.todo("workspace-write with workspace / neither renames other processes' new .git entries nor breaks the lifeline");

// Under `danger-full-access` the floor only sees what a command spells: a read whose path goes through a
// variable or substitution with no known store in its static prefix (`d=kube; cat ~/.$d/config`,
// `cat ~/.$(echo ssh)/id_rsa`), a recursive read of an ancestor of a store (`grep -r . ~`,
// `tar -C ~ -cf - .`, `find ~ -name 'id_*' | xargs cat`) and interpreter code (`python3 -c`, the interpreter
// tools) read credential stores with no card. (airlock's own tokens, database and environment are now out of
// reach there: test/security/danger-full-access-hides-airlock-secrets.test.ts.) Options: ask for a variable
// read under HOME, or mask the credential list under danger-full-access too, with
// `mcp_servers`-style opt-in.
test.todo("danger-full-access: a credential read the floor cannot spell out still needs a person");

// A hard link in the workspace to a credential file (`ln ~/.kube/config k`, made by the user, or under
// danger-full-access with a spelling the floor cannot read) is read by `developer__read_file k` with no card:
// the floor judges the path and its symlinks, not the inode. Hard links to the data dir's files are refused
// (test/security/file-tools-data-dir-hard-links.test.ts); credential files would need their inodes listed
// (folders such as ~/.ssh, ~/.gnupg walked) for each multiply-linked file a tool opens.
test.todo("developer__read_file of a hard link to a credential file asks like the file itself");

// Under `danger-full-access` python (unparsed) can rewrite the data dir's `airlock.yaml`: the next start runs
// with the model's hooks, MCP servers, mode and per-tool permissions. The tokens and database are masked for
// such processes now, but the data dir itself stays writable. A read-only bind of the data dir for
// danger-full-access processes would close it (nested `airlock` commands inside such a shell then fail).
test.todo("danger-full-access processes cannot change airlock's own configuration");

// An approval binds the script a call names, not the files that script itself sources by a static name
// (`sh x.sh` where x.sh runs `. ./lib.sh`): lib.sh rewritten while the card waits runs unbound.
test.todo("sh x.sh binds the files x.sh sources");

// Under `danger-full-access` with airlock running as root, the process keeps airlock's capabilities, so
// `umount -l /proc; umount -l $DATA/approver-token` undoes the walls that hide airlock's environment and
// tokens (test/security/danger-full-access-hides-airlock-secrets.test.ts holds for nobody, and for root
// only without CAP_SYS_ADMIN). Dropping CAP_SYS_ADMIN there changes what danger-full-access means; root
// can also read the raw disk. Needs a decision.
test.todo("danger-full-access as root cannot unmount the masks over airlock's secrets");

// Under `danger-full-access` the credential stores are readable by proxy, with no word naming them:
// `gh auth token`, `git credential fill`, `kubectl config view --raw`, `gcloud auth print-access-token`,
// `aws configure export-credentials`, `az account get-access-token`, `docker-credential-desktop get`
// print the secrets the floor asks about when a command names their files. (Confined, the stores are hidden,
// so these fail.) A list of such commands for the floor would close the common ones.
test.todo("danger-full-access: commands that print a credential store's secrets ask like reading the store");
