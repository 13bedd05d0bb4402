import { describe, expect, test } from "bun:test";
import { safeEqual } from "./auth.ts";
import { hostName, isAllowedHost } from "./host.ts";

describe("host.hostName", () => {
  test("parses names, ports and bracketed IPv6", () => {
    expect(["127.0.0.1:7420", "LOCALHOST", "[::1]:80", "[::1]", "example.com.", "a:b:c", "[::1]x", ""].map(hostName)).toEqual([
      "127.0.0.1",
      "localhost",
      "::1",
      "::1",
      "example.com",
      null,
      null,
      null,
    ]);
  });
});

describe("host.isAllowedHost", () => {
  test("loopback names always pass; the configured host passes; wildcards do not open every name", () => {
    expect(isAllowedHost("localhost", "127.0.0.1")).toBe(true);
    expect(isAllowedHost("::1", "127.0.0.1")).toBe(true);
    expect(isAllowedHost("airlock.lan", "airlock.lan")).toBe(true);
    expect(isAllowedHost("fe80::1", "fe80::1")).toBe(true);
    expect(isAllowedHost("evil.example", "127.0.0.1")).toBe(false);
    expect(isAllowedHost("evil.example", "0.0.0.0")).toBe(false);
    expect(isAllowedHost("0.0.0.0", "0.0.0.0")).toBe(false);
    expect(isAllowedHost("127.0.0.2", "127.0.0.1")).toBe(false);
  });
});

describe("auth.safeEqual", () => {
  test("equal only for identical strings", () => {
    expect(safeEqual("abc", "abc")).toBe(true);
    expect(safeEqual("abc", "abd")).toBe(false);
    expect(safeEqual("abc", "abcd")).toBe(false);
    expect(safeEqual("", "abc")).toBe(false);
  });
});
