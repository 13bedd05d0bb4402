/**
 * notify: webhooks against a real HTTP receiver on loopback: retries on 500 then success, gives up after
 * the bound (logged once, counted), a receiver that never answers is cut at the event's deadline without
 * holding up another notifier, and headers come from the environment only.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { Bus } from "../bus/bus.ts";
import { NotifyConfig } from "../config/schema.ts";
import { startReceiver, type Receiver } from "../../test/fixtures/webhook-receiver.ts";
import { Notifications, type RunEnd } from "./notifier.ts";

const receivers: Receiver[] = [];
const open: Notifications[] = [];
afterEach(async () => {
  for (const n of open.splice(0)) await n.close();
  for (const r of receivers.splice(0)) await r.close();
});

const BLOCKED: RunEnd = {
  session_id: "ses_test",
  status: "blocked",
  error: { code: "no_human_surface", message: "nobody could approve" },
  tool_calls: 1,
  refused_calls: [{ tool: "developer__shell", code: "no_human_surface", reason: "smart mode asks" }],
  duration_ms: 1234,
};

function notifications(notify: unknown, env: Record<string, string> = {}): { n: Notifications; log: string[] } {
  const log: string[] = [];
  const n = new Notifications({
    config: NotifyConfig.parse(notify),
    bus: new Bus(),
    store: { parentOf: () => null, getSession: async () => null },
    log: (l) => log.push(l),
    defaultConsoleUrl: "http://127.0.0.1:7420",
    command: { cwd: "/", dataDir: "/nonexistent", allowUnenforced: false },
    env,
  });
  open.push(n);
  return { n, log };
}

function receiver(respond?: Parameters<typeof startReceiver>[0]): Receiver {
  const r = startReceiver(respond);
  receivers.push(r);
  return r;
}

describe("notify webhook delivery", () => {
  test("retries a 500 with backoff and counts one success when the receiver recovers", async () => {
    const r = receiver((i) => (i < 2 ? 500 : 200));
    const { n, log } = await notifications({ notifiers: [{ name: "flaky", webhook: { url: `${r.url}/hook`, retries: 3, retry_backoff_ms: 20 }, timeout_s: 30 }] });
    n.runEnded(BLOCKED);
    await n.idle();
    expect(r.received.length).toBe(3);
    expect(r.received.every((x) => x.body.event === "run_blocked")).toBe(true);
    expect(n.stats()).toEqual({ sent: 1, failed: 0, notifiers: [{ name: "flaky", sent: 1, failed: 0 }] });
    expect(log).toEqual([]);
  });

  test("gives up after the retry bound, logs the failure once with the notifier's name and why, and counts it", async () => {
    const r = receiver(() => 503);
    const { n, log } = await notifications({ notifiers: [{ name: "down", webhook: { url: r.url, retries: 2, retry_backoff_ms: 10 }, timeout_s: 30 }] });
    n.runEnded(BLOCKED);
    await n.idle();
    expect(r.received.length).toBe(3); // the first attempt and 2 retries
    expect(n.stats().failed).toBe(1);
    expect(n.stats().sent).toBe(0);
    expect(log.length).toBe(1);
    expect(log[0]).toContain('notify "down"');
    expect(log[0]).toContain("run_blocked");
    expect(log[0]).toContain("HTTP 503");
    expect(log[0]).toContain("3 attempt(s)");
  });

  test("a 4xx other than 429 is not retried", async () => {
    const r = receiver(() => 404);
    const { n, log } = await notifications({ notifiers: [{ webhook: { url: r.url, retries: 3, retry_backoff_ms: 10 } }] });
    n.runEnded(BLOCKED);
    await n.idle();
    expect(r.received.length).toBe(1);
    expect(n.stats().failed).toBe(1);
    expect(log[0]).toContain('notify "notify[0]"');
    expect(log[0]).toContain("HTTP 404 (not retried)");
  });

  test("a receiver that never answers is cut at the event's timeout and counted; another notifier is not held up", async () => {
    const hang = receiver(() => "hang");
    const fast = receiver(() => 200);
    const { n, log } = await notifications({
      notifiers: [
        { name: "hangs", webhook: { url: hang.url, retries: 3, retry_backoff_ms: 10 }, timeout_s: 1 },
        { name: "fast", webhook: { url: fast.url }, timeout_s: 30 },
      ],
    });
    n.runEnded(BLOCKED);
    // the fast notifier's request arrives while the hanging one is still waiting
    await fast.waitFor(1);
    await hang.waitFor(1);
    expect(n.stats().notifiers.find((s) => s.name === "hangs")).toEqual({ name: "hangs", sent: 0, failed: 0 });
    await n.idle();
    expect(hang.received.length).toBe(1);
    expect(n.stats().notifiers).toEqual([
      { name: "hangs", sent: 0, failed: 1 },
      { name: "fast", sent: 1, failed: 0 },
    ]);
    expect(log.length).toBe(1);
    expect(log[0]).toContain('notify "hangs"');
    expect(log[0]).toContain("no answer within 1 s");
  });

  test("a header's value comes from its environment variable and never appears in the body; an unset variable fails the event", async () => {
    const r = receiver(() => 200);
    const secret = "tk_notify_secret_4f1c9e";
    const { n } = await notifications({ notifiers: [{ name: "ntfy", webhook: { url: `${r.url}/airlock-topic`, format: "ntfy", headers_env: { Authorization: "NTFY_AUTH" } } }] }, { NTFY_AUTH: `Bearer ${secret}` });
    n.runEnded(BLOCKED);
    await n.idle();
    expect(r.received.length).toBe(1);
    expect(r.received[0]!.headers.authorization).toBe(`Bearer ${secret}`);
    expect(JSON.stringify(r.received[0]!.body)).not.toContain(secret);
    // ntfy's JSON publishing: POST to the server's root, the topic in the body
    expect(r.received[0]!.path).toBe("/");
    expect(r.received[0]!.body).toMatchObject({ topic: "airlock-topic", priority: 4, tags: ["rotating_light"], click: "http://127.0.0.1:7420/#/s/ses_test" });

    const unset = notifications({ notifiers: [{ name: "nokey", webhook: { url: r.url, headers_env: { Authorization: "NOT_SET_ANYWHERE" } } }] });
    unset.n.runEnded(BLOCKED);
    await unset.n.idle();
    expect(r.received.length).toBe(1); // nothing sent without its header
    expect(unset.n.stats().failed).toBe(1);
    expect(unset.log[0]).toContain("NOT_SET_ANYWHERE");
  });

  test("url_env: the URL is read from the environment, and an unset one is a counted failure", async () => {
    const r = receiver(() => 200);
    const { n } = await notifications({ notifiers: [{ webhook: { url_env: "SLACK_HOOK_URL", format: "slack" } }] }, { SLACK_HOOK_URL: `${r.url}/services/T0/B0/x` });
    n.runEnded({ ...BLOCKED, status: "completed", error: null, refused_calls: [] });
    await n.idle();
    expect(r.received.map((x) => x.path)).toEqual(["/services/T0/B0/x"]);
    expect(Object.keys(r.received[0]!.body)).toEqual(["text"]);
    expect(r.received[0]!.body.text).toContain("run completed");
    expect(r.received[0]!.body.text).toContain("<http://127.0.0.1:7420/#/s/ses_test|");

    const unset = notifications({ notifiers: [{ webhook: { url_env: "NO_SUCH_HOOK_URL", format: "slack" } }] });
    unset.n.runEnded(BLOCKED);
    await unset.n.idle();
    expect(r.received.length).toBe(1);
    expect(unset.n.stats().failed).toBe(1);
    expect(unset.log[0]).toContain("environment variable NO_SUCH_HOOK_URL (url_env) is not set");
  });
});

describe("notify config", () => {
  test("a notifier is a command or a webhook, never both or neither; a literal secret in a URL is refused", () => {
    expect(NotifyConfig.safeParse({ notifiers: [{ command: "true", webhook: { url: "http://x/" } }] }).success).toBe(false);
    expect(NotifyConfig.safeParse({ notifiers: [{ on: ["card_parked"] }] }).success).toBe(false);
    expect(NotifyConfig.safeParse({ notifiers: [{ webhook: { url: "https://user:pw@ntfy.example/t" } }] }).success).toBe(false);
    expect(NotifyConfig.safeParse({ notifiers: [{ webhook: { url: "https://hooks.slack.com/services/T/B/x", format: "slack" } }] }).success).toBe(false);
    expect(NotifyConfig.safeParse({ notifiers: [{ webhook: { url: "http://x/", headers: { Authorization: "Bearer literal" } } }] }).success).toBe(false);
    expect(NotifyConfig.safeParse({ notifiers: [{ webhook: { url: "http://x/", url_env: "X" } }] }).success).toBe(false);
    expect(NotifyConfig.parse({ notifiers: [{ command: "true" }] }).notifiers[0]!.on).toEqual(["card_parked", "card_resolved", "run_finished", "run_blocked"]);
  });
});
