/**
 * @module store/pg-url
 * PostgreSQL URLs without the driver: recognising one and redacting its password, apart from
 * store/sql-pg.ts so choosing the storage (store/storage.ts) does not load `bun:sql` on a SQLite run
 * (docs/performance.md, issue 20 third round). store/sql-pg.ts re-exports both.
 */

/** True for a `postgres://` or `postgresql://` URL. */
export function isPostgresUrl(url: string): boolean {
  return /^postgres(ql)?:\/\//i.test(url);
}

/**
 * `url` with its password (userinfo password and a `password=` query parameter) replaced by `***`.
 * A string that does not parse as a URL is redacted by pattern (`//user:secret@` → `//user:***@`).
 */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = "***";
    for (const k of [...u.searchParams.keys()]) if (/pass(word)?$/i.test(k)) u.searchParams.set(k, "***");
    return u.toString();
  } catch {
    // Not a URL (e.g. a password holding an unescaped '/', or a keyword DSN): everything between '//' and
    // the last '@' goes (user and password alike), and any `…password = value` (quoted or not).
    return url
      .replace(/\/\/[^]*@/, "//***@")
      .replace(/(\w*pass(?:word)?\s*=\s*)('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|[^&\s]*)/gi, "$1***");
  }
}
