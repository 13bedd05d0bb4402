/**
 * @module cli/token
 * `airlock token`: prints where the API token and the approver token are, creating them if missing
 * (SPEC §2). The token values are never printed: read them from the files.
 */
import type { CommonOptions } from "./context.ts";

/** Options of `airlock token`. */
export interface TokenOptions extends Pick<CommonOptions, "dataDir"> {
  /** `--json`: print `{"data_dir", "api_token_path", "approver_token_path"}` instead of two lines. */
  json?: boolean;
}

/**
 * Ensures both tokens exist (files 0600 in the data dir) and prints their paths on stdout.
 * @returns exit code 0.
 * @throws AirlockError `usage` (data dir unusable) or `config_invalid` (a token file is empty or not a file).
 */
export async function token(opts: TokenOptions, env: Record<string, string | undefined> = process.env): Promise<number> {
  const { resolveDataDir, ensureTokens } = await import("../config/paths.ts");
  const { writeJson, writeStdout } = await import("./output.ts");
  const dataDir = resolveDataDir({ flag: opts.dataDir, env });
  const t = ensureTokens(dataDir);
  if (opts.json) {
    writeJson({ data_dir: dataDir, api_token_path: t.apiTokenPath, approver_token_path: t.approverTokenPath });
  } else {
    writeStdout(
      `API token:      ${t.apiTokenPath}\n` +
        `approver token: ${t.approverTokenPath}\n` +
        `Send the API token as 'Authorization: Bearer <token>'; send the approver token as 'X-Airlock-Approver: <token>' to allow calls that need user proof.\n`,
    );
  }
  return 0;
}
