/**
 * @module errors.test
 * The two tables of errors.ts: every code keeps its HTTP status (SPEC §6) and CLI exit code (SPEC §2).
 * The expected mapping is written out here as a literal, so a changed row or a new code without a row fails.
 * The docs' tables (docs/api.md: code → status and exit; docs/recipes.md: run status → exit) are checked against them.
 */
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { AirlockError, ERROR_CODES, EXIT, EXIT_CODE, HTTP_STATUS, assertNever, exitCodeFor, httpStatus, type ErrorCode } from "./errors.ts";
import { ResultStatus, exitCodeForStatus } from "./run/result.ts";

/** code → [HTTP status, exit code], as shipped. */
const EXPECTED: Record<string, [number, number]> = {
  bad_request:                     [400, 2],
  unauthorized:                    [401, 1],
  forbidden_host:                  [421, 1],
  not_found:                       [404, 1],
  conflict:                        [409, 1],
  payload_too_large:               [413, 1],
  internal:                        [500, 1],
  usage:                           [400, 2],
  server_unreachable:              [503, 1],
  config_invalid:                  [400, 2],
  recipe_invalid:                  [400, 2],
  data_dir_unusable:               [503, 2],
  data_dir_in_use:                 [409, 2],
  storage_unavailable:             [503, 2],
  session_busy:                    [409, 1],
  session_not_found:               [404, 1],
  session_graph_invalid:           [500, 1],
  privacy_violation:               [400, 1],
  max_iterations:                  [500, 1],
  token_budget:                    [500, 1],
  provider_error:                  [500, 1],
  provider_auth:                   [500, 1],
  provider_unavailable:            [503, 2],
  provider_rate_limit:             [500, 1],
  cancelled:                       [500, 130],
  interrupted:                     [500, 1],
  prompt_blocked:                  [500, 1],
  hook_stopped:                    [500, 1],
  gate_no_session:                 [500, 1],
  no_human_surface:                [500, 3],
  denied:                          [500, 1],
  expired:                         [404, 1],
  outside_scope:                   [403, 1],
  user_proof_required:             [403, 1],
  user_proof_invalid:              [403, 1],
  already_decided:                 [409, 1],
  lease_lost:                      [409, 1],
  worker_lost:                     [503, 1],
  no_worker:                       [503, 1],
  hook_timeout:                    [500, 1],
  hook_error:                      [500, 1],
  hook_output_invalid:             [500, 1],
  unknown_tool:                    [500, 1],
  invalid_arguments:               [400, 1],
  mode_chat:                       [500, 1],
  approval_stale:                  [409, 1],
  session_rule_not_offered:        [409, 1],
  sandbox_unavailable:             [500, 1],
  external_backend:                [500, 1],
  path_outside_workspace:          [500, 1],
  timed_out:                       [500, 1],
  elevation_invalid:               [400, 1],
  elevation_missing_justification: [500, 1],
  elevation_not_wider:             [500, 1],
  tool_failed:                     [500, 1],
  file_not_found:                  [500, 1],
  edit_no_match:                   [500, 1],
  read_only_policy:                [500, 1],
  protected_path:                  [500, 1],
  data_dir_refused:                [403, 1],
  metadata_scan_limit:             [409, 1],
  not_regular_file:                [500, 1],
  script_timeout:                  [500, 1],
  script_memory_limit:             [500, 1],
  script_stack_overflow:           [500, 1],
  script_too_many_calls:           [500, 1],
  script_output_too_large:         [500, 1],
  script_error:                    [500, 1],
  script_result_invalid:           [500, 1],
  script_worker_lost:              [503, 1],
  mcp_server_unavailable:          [500, 1],
  mcp_timeout:                     [500, 1],
  mcp_tool_error:                  [500, 1],
  preview_refused:                 [403, 1],
  binary_corrupt:                  [500, 1],
};

describe("errors tables", () => {
  test("every code keeps its HTTP status and its exit code", () => {
    const actual: Record<string, number[]> = Object.fromEntries(ERROR_CODES.map((c) => [c, [httpStatus(c), exitCodeFor(c)]]));
    expect(actual).toEqual(EXPECTED);
  });

  test("the expected table names exactly the codes there are", () => {
    expect(Object.keys(EXPECTED).sort()).toEqual([...ERROR_CODES].sort());
    expect(new Set<ErrorCode>(ERROR_CODES).size).toBe(ERROR_CODES.length);
  });

  test("assertNever fails closed: an AirlockError internal naming the value that slipped past the types", () => {
    let caught: unknown;
    try {
      assertNever("maybe" as never, "verdict");
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(AirlockError);
    expect((caught as AirlockError).code).toBe("internal");
    expect((caught as AirlockError).message).toStartWith('unexpected verdict: "maybe"');
  });
});

/** The rows of the first markdown table after `heading` in a doc: each row's cells, backticks stripped. */
async function docTable(doc: string, heading: string): Promise<string[][]> {
  const text = await Bun.file(join(import.meta.dir, "..", "docs", doc)).text();
  const from = text.indexOf(heading);
  if (from < 0) throw new Error(`${doc} has no heading ${JSON.stringify(heading)}`);
  const lines = text.slice(from).split("\n");
  const start = lines.findIndex((l) => l.startsWith("|"));
  const rows: string[][] = [];
  for (const l of lines.slice(start + 2)) {
    if (!l.startsWith("|")) break;
    rows.push(l.slice(1, -1).split(" | ").map((c) => c.trim().replace(/`/g, "")));
  }
  return rows;
}

describe("the docs' error tables", () => {
  test("docs/api.md 'Error codes' lists every code once, in order, with its HTTP_STATUS and EXIT_CODE", async () => {
    const rows = await docTable("api.md", "### Error codes");
    expect(rows.map((r) => `${r[0]} ${r[1]} ${r[2]}`)).toEqual(ERROR_CODES.map((c) => `${c} ${HTTP_STATUS[c]} ${EXIT_CODE[c]}`));
  });

  test("docs/recipes.md 'Status and exit code' gives each run status its exit code (invalid: the usage exit)", async () => {
    const rows = await docTable("recipes.md", "### Status and exit code");
    const expected = [...ResultStatus.options.map((s) => `${s} ${exitCodeForStatus(s)}`), `invalid ${EXIT.usage}`];
    expect(rows.map((r) => `${r[0]} ${r[1]}`).sort()).toEqual(expected.sort());
  });
});
