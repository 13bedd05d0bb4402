/**
 * @module cli/version
 * `airlock version [--json]`: the running binary's build facts. A release build (build/release.ts)
 * embeds them at compile time as the identifier `AIRLOCK_BUILD` (`--define`), so the binary alone knows
 * its commit, build date, Bun version and target; its size and sha256 are read from the running file.
 * `--json` prints what `release.json` holds for this binary: its top-level facts and its artifact row.
 */
import { version as packageVersion } from "../../package.json" with { type: "json" };
import { writeAll } from "./output.ts";

/** Set by build/release.ts through `define`: the JSON text of {@link EmbeddedBuild}. Absent outside a release build. */
declare const AIRLOCK_BUILD: string | undefined;

/** The facts a release build embeds (release.json's top level plus the artifact's `file` and `target`). */
export interface EmbeddedBuild {
  version: string;
  /** git commit (40 hex), with `-dirty` when the tree had uncommitted changes. */
  commit: string;
  /** ISO 8601 UTC: the commit's date (or SOURCE_DATE_EPOCH), so two builds of one commit agree. */
  build_date: string;
  bun_version: string;
  /** `bun build --compile --target` name, e.g. `bun-linux-x64-musl`. */
  target: string;
  /** Artifact file name, e.g. `airlock-linux-x64`. */
  file: string;
}

/** `version --json`: {@link EmbeddedBuild} fields (null outside a release build) plus the running file's size and hash. */
export interface VersionInfo {
  name: "airlock";
  version: string;
  commit: string | null;
  build_date: string | null;
  bun_version: string;
  target: string | null;
  file: string | null;
  /** Size of the running executable in bytes (release builds only, else null). */
  bytes: number | null;
  /** Lowercase hex sha256 of the running executable (release builds only, else null). */
  sha256: string | null;
}

/** The embedded build facts, or undefined when this is not a release build (`bun src/main.ts`, `dist/airlock`). */
export function embeddedBuild(): EmbeddedBuild | undefined {
  if (typeof AIRLOCK_BUILD !== "string") return undefined;
  return JSON.parse(AIRLOCK_BUILD) as EmbeddedBuild;
}

/** Collects {@link VersionInfo}; hashes `process.execPath` (about 100 MB) only for a release build. */
export async function versionInfo(): Promise<VersionInfo> {
  const b = embeddedBuild();
  if (!b) {
    return { name: "airlock", version: packageVersion, commit: null, build_date: null, bun_version: Bun.version, target: null, file: null, bytes: null, sha256: null };
  }
  const file = Bun.file(process.execPath);
  const hasher = new Bun.CryptoHasher("sha256");
  for await (const chunk of file.stream()) hasher.update(chunk);
  return { name: "airlock", ...b, bytes: file.size, sha256: hasher.digest("hex") };
}

/** `airlock version`: one line (`airlock 0.1.0 (commit 1a2b3c4, 2026-…, bun 1.4.4, bun-linux-x64)`), or `--json`. Exit 0. */
export async function versionCommand(opts: { json?: boolean }): Promise<number> {
  if (opts.json) {
    writeAll(1, `${JSON.stringify(await versionInfo(), null, 2)}\n`);
    return 0;
  }
  const b = embeddedBuild();
  const facts = b ? `commit ${b.commit.slice(0, 12)}, built ${b.build_date}, bun ${b.bun_version}, ${b.target}` : `development build, bun ${Bun.version}`;
  writeAll(1, `airlock ${b?.version ?? packageVersion} (${facts})\n`);
  return 0;
}
