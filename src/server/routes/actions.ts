/**
 * @module server/routes/actions
 * Cards over HTTP (SPEC §6): `GET /sessions/:id/actions` (the cards this session may answer),
 * `POST /sessions/:id/actions/:request_id` (decide one, from that session; the approver token in
 * `X-Airlock-Approver`; `allow_session` also adds the card's `suggested_rule` for the session tree),
 * `POST /actions/:request_id` (the same, posted at the card's root surface: the session it was relayed to),
 * `GET /actions` (every pending card, for `airlock actions list`), and the session tree's rules:
 * `GET /sessions/:id/rules`, `DELETE /sessions/:id/rules/:rule_id`.
 */
import { Hono } from "hono";
import { z } from "zod";
import type { Cards } from "../../card/pending.ts";
import { APPROVER_HEADER } from "../../card/authority.ts";
import type { Store } from "../../store/store.ts";
import type { SessionRules } from "../../store/session-rules.ts";
import type { CardList, CardOutcome, SessionRuleList, SessionRuleRemoved } from "../api-schemas.ts";
import { parseBody } from "../validate.ts";

export const DecisionBody = z.strictObject({
  decision: z.enum(["allow_once", "allow_session", "deny"]),
  reason: z.string().max(2000).optional(),
});
export type DecisionBody = z.input<typeof DecisionBody>;

/** What the routes need from the runtime. */
export interface ActionsRuntime {
  readonly store: Pick<Store, "requireSession">;
  readonly cards: Pick<Cards, "listForSession" | "listAll" | "resolve" | "resolveAtSurface">;
  readonly sessionRules: Pick<SessionRules, "list" | "remove">;
}

/** The actions routes, with full paths (mounted behind the auth middleware). Errors are thrown as AirlockError (rendered by app.onError). */
export function actionsRoutes(rt: ActionsRuntime): Hono {
  const app = new Hono();

  app.get("/actions", (c) => c.json({ actions: rt.cards.listAll() } satisfies CardList));

  app.get("/sessions/:id/actions", async (c) => {
    const id = c.req.param("id");
    await rt.store.requireSession(id);
    return c.json({ actions: rt.cards.listForSession(id) } satisfies CardList);
  });

  app.post("/sessions/:id/actions/:request_id", async (c) => {
    const id = c.req.param("id");
    const requestId = c.req.param("request_id");
    const body = await parseBody(c, DecisionBody);
    await rt.store.requireSession(id);
    const r = await rt.cards.resolve(requestId, body.decision, {
      sessionId: id,
      approverToken: c.req.header(APPROVER_HEADER) ?? null,
      actor: "http",
      ...(body.reason ? { reason: body.reason } : {}),
    });
    if (!r.ok) throw r.error;
    return c.json(r.outcome satisfies CardOutcome, 200);
  });

  // No session named: the answer is posted at the card's root surface, the one it was relayed to (Cards.answerSurface).
  app.post("/actions/:request_id", async (c) => {
    const requestId = c.req.param("request_id");
    const body = await parseBody(c, DecisionBody);
    const r = await rt.cards.resolveAtSurface(requestId, body.decision, {
      approverToken: c.req.header(APPROVER_HEADER) ?? null,
      actor: "http",
      ...(body.reason ? { reason: body.reason } : {}),
    });
    if (!r.ok) throw r.error;
    return c.json(r.outcome satisfies CardOutcome, 200);
  });

  app.get("/sessions/:id/rules", async (c) => {
    const id = c.req.param("id");
    await rt.store.requireSession(id);
    return c.json({ rules: await rt.sessionRules.list(id) } satisfies SessionRuleList);
  });

  app.delete("/sessions/:id/rules/:rule_id", async (c) => {
    const id = c.req.param("id");
    await rt.store.requireSession(id);
    const removed = await rt.sessionRules.remove(id, c.req.param("rule_id"), "http");
    return c.json({ removed } satisfies SessionRuleRemoved, 200);
  });

  return app;
}
