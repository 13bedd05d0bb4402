/**
 * @module server/openapi
 * The OpenAPI 3.1 document of the local API (`GET /openapi.json`), generated from the zod schemas that
 * validate the requests (the routes' bodies and queries) and type the answers (server/api-schemas.ts,
 * console/api-schemas.ts, bus/events.ts), through a small route registry ({@link API_ROUTES}).
 *
 * Why zod 4's own `z.toJSONSchema` and a registry rather than `@hono/zod-openapi` or `hono-openapi`: zod 4
 * emits JSON Schema draft 2020-12, which is the schema dialect of OpenAPI 3.1, with shared schemas as
 * `$ref`s through a zod registry; the routes stay plain Hono handlers (no second routing layer, no new
 * dependency in the binary); and SSE routes, which those generators do not model, are described the same
 * way as the rest. The registry is checked against the app: `test/integration/openapi.test.ts` walks
 * `app.routes` and fails on a route the document lacks, or a documented path the app does not serve.
 */
import { z } from "zod";
import { version } from "../../package.json" with { type: "json" };
import { Events, Snapshot } from "../bus/events.ts";
import { ConsoleCard, ConsoleEvents, ConsoleSnapshot, CardPreview } from "../console/api-schemas.ts";
import { ERROR_CODES, HTTP_STATUS, type ErrorCode } from "../errors.ts";
import { AuditQueryParams } from "../store/audit-log.ts";
import { Message, Session } from "../session/types.ts";
import * as Api from "./api-schemas.ts";
import { ServerProofQuery } from "./server-proof.ts";
import { DecisionBody } from "./routes/actions.ts";
import { NewScheduleBody, RunsQuery } from "./routes/schedules.ts";
import { CreateSessionBody, ListLimit, ReplyBody } from "./routes/sessions.ts";

type Method = "get" | "post" | "delete";

/** What a route answers on success: JSON of a schema, an SSE stream of named events, or a static file. */
type Success =
  | { status: number; json: z.ZodType }
  | { status: number; sse: Readonly<Record<string, z.ZodType>> }
  | { status: number; file: string };

/** One route of the API as documented. `path` is Hono's (`/sessions/:id`); `errors` the codes it is known to answer. */
export interface ApiRoute {
  method: Method;
  path: string;
  summary: string;
  tag: string;
  /** Served without the bearer token (`/health`, `/server-proof`, the console's files). */
  public?: true;
  body?: z.ZodType;
  query?: z.ZodObject;
  /** Request headers it reads besides `Authorization`. */
  headers?: { name: string; description: string }[];
  ok: Success;
  errors: ErrorCode[];
}

/** The SSE events of a session's streams: `snapshot` (first on `/events`) and every bus event. */
const SESSION_EVENTS: Readonly<Record<string, z.ZodType>> = { snapshot: Snapshot, ...Events };
const APPROVER = { name: "X-Airlock-Approver", description: "the approver token (`<data dir>/approver-token`): needed for an allow on a card with `requires_user_proof`" };

/** Every route of the app (server/app.ts), in the order docs/api.md lists them. */
export const API_ROUTES: readonly ApiRoute[] = [
  { method: "get", path: "/health", tag: "server", public: true, summary: "Liveness, version and notification counts (no token)", ok: { status: 200, json: Api.Health }, errors: [] },
  {
    method: "get",
    path: "/server-proof",
    tag: "server",
    public: true,
    summary: "Proof that this server holds the API token and is bound to its address and port: HMAC over a client's nonce (no token)",
    query: ServerProofQuery,
    ok: { status: 200, json: Api.ServerProof },
    errors: ["bad_request"],
  },
  { method: "get", path: "/openapi.json", tag: "server", summary: "This document", ok: { status: 200, json: z.record(z.string(), z.unknown()) }, errors: [] },
  { method: "post", path: "/sessions", tag: "sessions", summary: "Create a session", body: CreateSessionBody, ok: { status: 201, json: Api.SessionCreated }, errors: ["bad_request", "privacy_violation", "session_not_found"] },
  { method: "get", path: "/sessions", tag: "sessions", summary: "List sessions, newest first", query: z.object({ limit: ListLimit.optional() }), ok: { status: 200, json: Api.SessionList }, errors: ["bad_request"] },
  { method: "get", path: "/sessions/:id", tag: "sessions", summary: "A session with its messages, turns and token usage", ok: { status: 200, json: Api.SessionDetail }, errors: ["session_not_found"] },
  { method: "get", path: "/sessions/:id/usage", tag: "sessions", summary: "The tokens of a session's model calls, and of its subtree's", ok: { status: 200, json: Api.SessionUsage }, errors: ["session_not_found"] },
  { method: "post", path: "/sessions/:id/reply", tag: "sessions", summary: "Start a turn; SSE of its events until its turn_finished", body: ReplyBody, ok: { status: 200, sse: Events }, errors: ["bad_request", "session_not_found", "session_busy"] },
  {
    method: "get",
    path: "/sessions/:id/events",
    tag: "sessions",
    summary: "SSE: a snapshot, then the session's live events; resumable",
    headers: [{ name: "Last-Event-ID", description: "the last event id seen: replays what came after it, or sends a fresh snapshot when the buffer cannot" }],
    ok: { status: 200, sse: SESSION_EVENTS },
    errors: ["session_not_found"],
  },
  { method: "post", path: "/sessions/:id/cancel", tag: "sessions", summary: "Cancel the running turn", ok: { status: 200, json: Api.CancelAnswer }, errors: ["session_not_found"] },
  { method: "get", path: "/sessions/:id/actions", tag: "cards", summary: "The cards this session may answer", ok: { status: 200, json: Api.CardList }, errors: ["session_not_found"] },
  {
    method: "post",
    path: "/sessions/:id/actions/:request_id",
    tag: "cards",
    summary: "Decide a card from this session",
    body: DecisionBody,
    headers: [APPROVER],
    ok: { status: 200, json: Api.CardOutcome },
    errors: ["bad_request", "session_not_found", "not_found", "outside_scope", "user_proof_required", "user_proof_invalid", "already_decided", "approval_stale", "session_rule_not_offered", "expired"],
  },
  { method: "get", path: "/actions", tag: "cards", summary: "Every pending card", ok: { status: 200, json: Api.CardList }, errors: [] },
  {
    method: "post",
    path: "/actions/:request_id",
    tag: "cards",
    summary: "Decide a card at its root surface",
    body: DecisionBody,
    headers: [APPROVER],
    ok: { status: 200, json: Api.CardOutcome },
    errors: ["bad_request", "not_found", "user_proof_required", "user_proof_invalid", "already_decided", "approval_stale", "session_rule_not_offered", "expired"],
  },
  { method: "get", path: "/sessions/:id/rules", tag: "cards", summary: "The session tree's allow rules", ok: { status: 200, json: Api.SessionRuleList }, errors: ["session_not_found"] },
  { method: "delete", path: "/sessions/:id/rules/:rule_id", tag: "cards", summary: "Remove a session tree's rule", ok: { status: 200, json: Api.SessionRuleRemoved }, errors: ["session_not_found", "not_found"] },
  { method: "get", path: "/audit", tag: "audit", summary: "The decision log, newest first", query: AuditQueryParams, ok: { status: 200, json: Api.AuditList }, errors: ["bad_request", "session_not_found"] },
  { method: "get", path: "/schedules", tag: "schedules", summary: "List schedules", ok: { status: 200, json: Api.ScheduleList }, errors: [] },
  { method: "post", path: "/schedules", tag: "schedules", summary: "Add a schedule", body: NewScheduleBody, ok: { status: 201, json: Api.Schedule }, errors: ["bad_request", "recipe_invalid"] },
  { method: "get", path: "/schedules/:id", tag: "schedules", summary: "A schedule", ok: { status: 200, json: Api.Schedule }, errors: ["not_found"] },
  { method: "delete", path: "/schedules/:id", tag: "schedules", summary: "Remove a schedule (its runs are kept)", ok: { status: 200, json: Api.ScheduleDeleted }, errors: ["not_found"] },
  { method: "post", path: "/schedules/:id/run", tag: "schedules", summary: "Run a schedule now (409 conflict with the skipped run while one runs)", ok: { status: 202, json: Api.RunView }, errors: ["not_found", "conflict"] },
  { method: "get", path: "/schedules/:id/runs", tag: "schedules", summary: "A schedule's runs, newest first", query: RunsQuery, ok: { status: 200, json: Api.RunList }, errors: ["bad_request"] },
  { method: "get", path: "/runs", tag: "schedules", summary: "Every schedule's runs, newest first", query: RunsQuery, ok: { status: 200, json: Api.RunList }, errors: ["bad_request"] },
  { method: "get", path: "/runs/:id", tag: "schedules", summary: "A run's result object", ok: { status: 200, json: Api.RunView }, errors: ["not_found"] },
  { method: "get", path: "/", tag: "console", public: true, summary: "The console's page (no token)", ok: { status: 200, file: "text/html" }, errors: [] },
  { method: "get", path: "/console.js", tag: "console", public: true, summary: "The console's script (no token)", ok: { status: 200, file: "text/javascript" }, errors: [] },
  { method: "get", path: "/console.css", tag: "console", public: true, summary: "The console's style (no token)", ok: { status: 200, file: "text/css" }, errors: [] },
  { method: "get", path: "/console/events", tag: "console", summary: "SSE: the console's feed of every session (ids per connection, no resume)", ok: { status: 200, sse: ConsoleEvents }, errors: [] },
  {
    method: "get",
    path: "/sessions/:id/actions/:request_id/preview",
    tag: "console",
    summary: "The diff a pending write/edit card would make",
    ok: { status: 200, json: CardPreview },
    errors: ["session_not_found", "not_found", "preview_refused"],
  },
];

/** Hono's `/sessions/:id` as OpenAPI's `/sessions/{id}`. */
export function openApiPath(honoPath: string): string {
  return honoPath.replace(/:([A-Za-z0-9_]+)/g, "{$1}");
}

/** Named components: each schema's `$ref` name (request side, then answer side). */
const REQUEST_SCHEMAS: Record<string, z.ZodType> = { CreateSessionBody, ReplyBody, DecisionBody, NewScheduleBody };
const ANSWER_SCHEMAS: Record<string, z.ZodType> = {
  ApiError: Api.ApiError,
  Session,
  Message,
  Card: Events.action_required,
  ...Object.fromEntries(Object.entries({ ...Api }).filter(([k, v]) => k !== "ApiError" && v instanceof z.ZodType)),
  Snapshot,
  TurnStarted: Events.turn_started,
  Delta: Events.delta,
  NewMessage: Events.message,
  ToolRequest: Events.tool_request,
  ToolResult: Events.tool_result,
  ActionResolved: Events.action_resolved,
  TurnFinished: Events.turn_finished,
  TurnError: Events.error,
  HookMessage: Events.hook_message,
  ConsoleCard,
  ConsoleSnapshot,
  CardPreview,
};

type Json = Record<string, unknown>;
const REF = (name: string) => `#/components/schemas/${name}`;

/** JSON Schemas of `named` (one io side), `$ref`-linked to each other; `$schema`/`$id` removed (the document's dialect applies). */
function componentSchemas(named: Record<string, z.ZodType>, io: "input" | "output"): { schemas: Record<string, Json>; refOf: Map<z.ZodType, string> } {
  const reg = z.registry<{ id: string }>();
  const refOf = new Map<z.ZodType, string>();
  for (const [id, s] of Object.entries(named)) {
    if (refOf.has(s)) continue;
    reg.add(s, { id });
    refOf.set(s, id);
  }
  const out = z.toJSONSchema(reg, { target: "draft-2020-12", io, unrepresentable: "any", uri: REF }).schemas as Record<string, Json>;
  for (const s of Object.values(out)) {
    delete s.$schema;
    delete s.$id;
  }
  return { schemas: out, refOf };
}

/** A schema as a `$ref` when it is a named component, else inline JSON Schema. */
function schemaOf(s: z.ZodType, refOf: Map<z.ZodType, string>, io: "input" | "output"): Json {
  const id = refOf.get(s);
  if (id) return { $ref: REF(id) };
  const j = z.toJSONSchema(s, { target: "draft-2020-12", io, unrepresentable: "any" }) as Json;
  delete j.$schema;
  return j;
}

/** The distinct statuses of the error table, each with its codes. */
function errorStatuses(): Map<number, ErrorCode[]> {
  const m = new Map<number, ErrorCode[]>();
  for (const code of ERROR_CODES) {
    const st = HTTP_STATUS[code];
    m.set(st, [...(m.get(st) ?? []), code]);
  }
  return new Map([...m].sort((a, b) => a[0] - b[0]));
}

/** An SSE route's body: one frame `{event, id, data}` per event, `data` the JSON of that event's schema. */
function sseSchema(events: Readonly<Record<string, z.ZodType>>, refOf: Map<z.ZodType, string>): Json {
  return {
    description:
      "A Server-Sent Events stream (text/event-stream): each event is `event: NAME`, `id: ID`, `data: JSON`; idle streams get a `: heartbeat` comment. One frame per schema below.",
    oneOf: Object.entries(events).map(([name, s]) => ({
      type: "object",
      title: name,
      properties: { event: { const: name }, id: { type: "string" }, data: schemaOf(s, refOf, "output") },
      required: ["event", "id", "data"],
    })),
  };
}

function operation(r: ApiRoute, reqRefs: Map<z.ZodType, string>, ansRefs: Map<z.ZodType, string>): Json {
  const parameters: Json[] = [];
  for (const m of r.path.matchAll(/:([A-Za-z0-9_]+)/g)) parameters.push({ name: m[1], in: "path", required: true, schema: { type: "string" } });
  if (r.query) {
    const q = schemaOf(r.query, new Map(), "input") as { properties?: Record<string, Json>; required?: string[] };
    for (const [name, schema] of Object.entries(q.properties ?? {})) parameters.push({ name, in: "query", required: (q.required ?? []).includes(name), schema });
  }
  for (const h of r.headers ?? []) parameters.push({ name: h.name, in: "header", required: false, description: h.description, schema: { type: "string" } });

  const responses: Json = {};
  const ok = r.ok;
  if ("json" in ok) responses[ok.status] = { description: "success", content: { "application/json": { schema: schemaOf(ok.json, ansRefs, "output") } } };
  else if ("sse" in ok) responses[ok.status] = { description: `SSE events: ${Object.keys(ok.sse).join(", ")}`, content: { "text/event-stream": { schema: sseSchema(ok.sse, ansRefs) } } };
  else responses[ok.status] = { description: "the file", content: { [ok.file]: { schema: { type: "string" } } } };
  const codes = new Set<ErrorCode>(r.errors);
  codes.add("forbidden_host");
  codes.add("internal");
  if (!r.public) codes.add("unauthorized");
  if (r.body) {
    codes.add("payload_too_large");
    codes.add("bad_request");
  }
  if (!r.public) codes.add("data_dir_unusable");
  const statuses = [...new Set([...codes].map((c) => HTTP_STATUS[c]))].sort((a, b) => a - b);
  for (const st of statuses) responses[st] = { $ref: `#/components/responses/Error${st}` };
  responses.default = { $ref: "#/components/responses/Error" };

  const op: Json = { operationId: operationId(r), summary: r.summary, tags: [r.tag], responses };
  if (parameters.length) op.parameters = parameters;
  if (r.body) op.requestBody = { required: false, content: { "application/json": { schema: schemaOf(r.body, reqRefs, "input") } } };
  if (r.public) op.security = [];
  const known = r.errors.length ? ` Known error codes: ${r.errors.map((c) => `\`${c}\``).join(", ")}.` : "";
  op.description = `${r.summary}.${known} See docs/api.md.`;
  return op;
}

/** `get /sessions/:id/actions` → `get_sessions_id_actions` (unique per method and path). */
function operationId(r: ApiRoute): string {
  const p = r.path.replace(/[:.]/g, "").replace(/\//g, "_").replace(/^_$/, "_root");
  return `${r.method}${p}`;
}

/** Builds the document (not cached: see {@link openApiDocument}). */
function buildDocument(): Json {
  const req = componentSchemas(REQUEST_SCHEMAS, "input");
  const ans = componentSchemas(ANSWER_SCHEMAS, "output");
  const paths: Record<string, Json> = {};
  for (const r of API_ROUTES) {
    const p = openApiPath(r.path);
    paths[p] ??= {};
    paths[p][r.method] = operation(r, req.refOf, ans.refOf);
  }
  const responses: Json = {
    Error: { description: "any failure: the error object, with the code's status from the error table (`x-airlock-error-status`)", content: { "application/json": { schema: { $ref: REF("ApiError") } } } },
  };
  for (const [st, codes] of errorStatuses()) {
    responses[`Error${st}`] = { description: `error codes answered with ${st}: ${codes.join(", ")}`, content: { "application/json": { schema: { $ref: REF("ApiError") } } } };
  }
  return {
    openapi: "3.1.0",
    info: {
      title: "airlock local API",
      version,
      description: "The HTTP API of `airlock serve` (docs/api.md, SPEC §6). Every route but /health, /server-proof and the console's files needs `Authorization: Bearer <api-token>`.",
    },
    // relative: the server that served this document (default http://127.0.0.1:7420, server.host / server.port)
    servers: [{ url: "/", description: "the airlock serve that answered GET /openapi.json" }],
    security: [{ bearer: [] }],
    tags: [...new Set(API_ROUTES.map((r) => r.tag))].map((name) => ({ name })),
    paths,
    components: {
      securitySchemes: { bearer: { type: "http", scheme: "bearer", description: "the api-token of the data dir (`airlock token` prints where)" } },
      schemas: { ...req.schemas, ...ans.schemas },
      responses,
    },
    "x-airlock-error-status": Object.fromEntries(ERROR_CODES.map((c) => [c, HTTP_STATUS[c]])),
  };
}

let cached: { doc: Json; text: string } | undefined;

/**
 * The OpenAPI 3.1 document of the API as a JSON object, and as its serialised text. Built once per
 * process on first use (about 10–30 ms, see docs/performance.md) and cached: it depends on code only.
 * Pure apart from the cache; never throws on a consistent registry.
 */
export function openApiDocument(): { doc: Json; text: string } {
  if (!cached) {
    const doc = buildDocument();
    cached = { doc, text: JSON.stringify(doc) };
  }
  return cached;
}
