import { expect, test } from "bun:test";
import { connectFailure } from "./server-client.ts";

test("connectFailure: a real refused, unresolvable and timed-out fetch in a few words, never Bun's own question", async () => {
  const gone = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("") });
  const port = gone.port;
  await gone.stop(true);
  const failure = async (url: string, init?: RequestInit): Promise<unknown> => {
    try {
      await fetch(url, init);
    } catch (e) {
      return e;
    }
    throw new Error(`${url} answered`);
  };
  expect(connectFailure(await failure(`http://127.0.0.1:${port}/health`))).toBe("the connection was refused, so nothing listens on that port");
  expect(connectFailure(await failure("http://airlock-test.invalid:9/health"))).toBe("the host name does not resolve");
  const slow = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Promise<Response>(() => {}) });
  try {
    expect(connectFailure(await failure(`http://127.0.0.1:${slow.port}/`, { signal: AbortSignal.timeout(50) }))).toBe("the connection timed out");
  } finally {
    await slow.stop(true);
  }
  // an error of another kind: its own message, without Bun's "Is the computer able to access the url?"
  expect(connectFailure(Object.assign(new Error("EWHAT: Unable to connect. Is the computer able to access the url?"), { code: "EWHAT" }))).toBe("EWHAT: Unable to connect.");
});
