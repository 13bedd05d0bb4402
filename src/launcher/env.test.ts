import { describe, expect, test } from "bun:test";
import { isSecretName, sanitizedEnv } from "./env.ts";

describe("env.sanitizedEnv", () => {
  const source = {
    PATH: "/usr/bin:/bin",
    HOME: "/home/u",
    LANG: "C.UTF-8",
    LC_ALL: "C",
    TERM: "xterm",
    TZ: "UTC",
    USER: "u",
    OPENAI_API_KEY: "sk-1",
    GITHUB_TOKEN: "ghp",
    AWS_SECRET_ACCESS_KEY: "a",
    DB_PASSWORD: "p",
    DATABASE_URL: "postgres://u:p@h/db",
    SSH_AUTH_SOCK: "/tmp/agent",
    NODE_OPTIONS: "--require evil.js",
    LD_PRELOAD: "/tmp/x.so",
  };

  test("keeps only the allow-list (an allow-list, not a deny-list: unknown names are dropped too)", () => {
    expect(sanitizedEnv({}, { source })).toEqual({ PATH: "/usr/bin:/bin", HOME: "/home/u", LANG: "C.UTF-8", LC_ALL: "C", TERM: "xterm", TZ: "UTC", USER: "u" });
  });

  test("adds extras, but never secret-looking ones unless explicitly allowed", () => {
    expect(sanitizedEnv({ BUN_BE_BUN: "1", MY_API_KEY: "k" }, { source: { PATH: "/bin" } })).toEqual({ PATH: "/bin", BUN_BE_BUN: "1" });
    expect(sanitizedEnv({ GITHUB_TOKEN: "t" }, { source: {}, allowSecretNames: true })).toMatchObject({ GITHUB_TOKEN: "t" });
  });

  test("the secret-name filter applies to allow-listed families too: LC_MY_TOKEN and LC_API_KEY never pass", () => {
    expect(sanitizedEnv({}, { source: { PATH: "/bin", LC_ALL: "C", LC_MY_TOKEN: "t", LC_API_KEY: "k", LC_SECRET_X: "s" } })).toEqual({ PATH: "/bin", LC_ALL: "C" });
  });

  test("gives a standard PATH when the source has none", () => {
    expect(sanitizedEnv({}, { source: {} }).PATH).toContain("/usr/bin");
  });

  test("isSecretName recognises keys, tokens, secrets, passwords and DATABASE_URL", () => {
    const names = ["OPENAI_API_KEY", "GITHUB_TOKEN", "CLIENT_SECRET", "PGPASSWORD", "my_password_file", "DATABASE_URL", "PATH", "HOME", "LANG"];
    expect(names.filter(isSecretName)).toEqual(["OPENAI_API_KEY", "GITHUB_TOKEN", "CLIENT_SECRET", "PGPASSWORD", "my_password_file", "DATABASE_URL"]);
  });

  test("isSecretName: PASS and AUTH as a word, cookies, DSNs, private keys (found by attacking LC_*); GIT_AUTHOR_NAME, PWD, OLDPWD pass", () => {
    const names = ["LC_MY_PASS", "LC_AUTH", "NPM_AUTH", "AUTH_HEADER", "SESSION_COOKIE", "SENTRY_DSN", "GPG_PRIVATE_KEY_FILE", "DB_PWD", "GCP_CREDENTIAL_FILE", "GIT_AUTHOR_NAME", "PWD", "OLDPWD", "PASSAGE", "COMPASS"];
    expect(names.filter(isSecretName)).toEqual(["LC_MY_PASS", "LC_AUTH", "NPM_AUTH", "AUTH_HEADER", "SESSION_COOKIE", "SENTRY_DSN", "GPG_PRIVATE_KEY_FILE", "DB_PWD", "GCP_CREDENTIAL_FILE"]);
  });
});
