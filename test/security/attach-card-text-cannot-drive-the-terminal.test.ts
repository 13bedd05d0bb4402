/**
 * What `airlock attach` prints from the server (a hook's reason, a session title, a path, the arguments)
 * cannot drive the person's terminal: escape sequences (cursor moves that hide a line, OSC 52 that writes the
 * clipboard), BEL and C1 controls are printed as visible `\uXXXX` escapes.
 */
import { describe, expect, test } from "bun:test";
import type { ConsoleCard } from "../../src/console/routes.ts";

describe("text from the server cannot drive the terminal", () => {
  test("escapes, BEL and C1 controls in a reason, a session name, a path or an argument are printed as visible escapes", async () => {
    const { argumentLines, cardBlock, colorsFor } = await import("../../src/cli/attach-format.ts");
    const { safe } = await import("../../src/cli/output.ts");
    const evil = "ok\x1b]52;c;cm0gLXJmIH4=\x07\x1b[2A\x9b31m\r";
    const card: ConsoleCard = {
      request_id: "act_1",
      home_session_id: "c",
      surfaced_in: "r",
      tool: "developer__shell",
      arguments: { command: `${evil}\nsecond line` },
      inspector: "hook",
      reason: evil,
      requires_user_proof: false,
      expires_at: new Date().toISOString(),
      user_only: true,
      files: [{ path: evil, kind: "missing" }],
      chain: [
        { id: "r", name: "root" },
        { id: "c", name: evil },
      ],
      answer_in: "r",
    };
    const text = cardBlock(colorsFor({ tty: false, plain: true, env: {} }), card, { maxArgLines: Infinity, now: 0, morePending: 0 }).join("\n");
    expect(text).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/);
    expect(text).toContain(safe(evil));
    expect(safe(evil)).toBe("ok\\u001b]52;c;cm0gLXJmIH4=\\u0007\\u001b[2A\\u009b31m\\u000d");
    expect(argumentLines({ x: "\x9b" }).join("")).not.toContain("\x9b");
  });
});
