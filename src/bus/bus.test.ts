import { describe, expect, test } from "bun:test";
import { Bus } from "./bus.ts";

/** A valid `delta` payload (publish checks payloads against their schema under `bun test`). */
const delta = (sessionId: string, text: string) => ({ session_id: sessionId, turn_id: "turn_1", text });

describe("bus", () => {
  test("ids increase per session and subscribers get events in order", () => {
    const bus = new Bus();
    const got: number[] = [];
    const off = bus.subscribe("s1", (e) => got.push(e.id));
    bus.publish("s1", "delta", delta("s1", "a"));
    bus.publish("s2", "delta", delta("s2", "x"));
    bus.publish("s1", "delta", delta("s1", "b"));
    off();
    bus.publish("s1", "delta", delta("s1", "c"));
    expect(got).toEqual([1, 2]);
    expect(bus.lastId("s1")).toBe(3);
    expect(bus.lastId("s2")).toBe(1);
  });

  test("since() replays what a client missed, or null when the buffer no longer reaches back", () => {
    const bus = new Bus(3); // keeps at least 3 events, trimmed back to 3 once it holds more than 6
    for (let i = 0; i < 7; i++) bus.publish("s", "delta", delta("s", String(i)));
    expect(bus.since("s", 5)!.map((e) => e.id)).toEqual([6, 7]);
    expect(bus.since("s", 4)!.map((e) => e.id)).toEqual([5, 6, 7]);
    expect(bus.since("s", 3)).toBeNull();
    expect(bus.since("s", 7)).toEqual([]);
    expect(bus.since("s", 99)).toBeNull();
    for (let i = 0; i < 3; i++) bus.publish("s", "delta", delta("s", String(i))); // 8..10: not trimmed yet (6 held)
    expect(bus.since("s", 4)!.map((e) => e.id)).toEqual([5, 6, 7, 8, 9, 10]);
  });

  test("a throwing listener does not stop the others", () => {
    const bus = new Bus();
    const seen: string[] = [];
    bus.subscribe("s", () => {
      throw new Error("boom");
    });
    bus.subscribe("s", (e) => seen.push(e.type));
    const orig = console.error;
    console.error = () => {};
    bus.publish("s", "message", { id: "msg_1", session_id: "s", turn_id: null, role: "user", content: "hi", created_at: "2026-12-01T00:00:00.000Z" });
    console.error = orig;
    expect(seen).toEqual(["message"]);
  });

  test("wire ids name the bus that issued them; an id of another bus or one that cannot be parsed is null", () => {
    const a = new Bus();
    const b = new Bus();
    expect(a.epoch).not.toBe(b.epoch);
    expect(a.wireId(7)).toBe(`${a.epoch}-7`);
    expect(a.parseWireId(a.wireId(7))).toBe(7);
    expect(a.parseWireId(b.wireId(7))).toBeNull();
    for (const bad of [undefined, "", "7", "x-", `${a.epoch}-`, `${a.epoch}-1.5`, `${a.epoch}--1`, `${a.epoch}-7 junk`]) expect(a.parseWireId(bad)).toBeNull();
  });
});
