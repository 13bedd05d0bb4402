/**
 * @module agent/providers/anthropic-defaults
 * The anthropic provider's defaults, apart from the adapter so the runtime (agent/compact.ts) reads them
 * without loading `@anthropic-ai/sdk` at start (docs/performance.md, issue 20 third round).
 */

/** Where `provider.name: anthropic` talks when `provider.base_url` is not set (the API root, without `/v1`). */
export const ANTHROPIC_DEFAULT_BASE_URL = "https://api.anthropic.com";
/** The model asked for when `provider.model` is not set. */
export const ANTHROPIC_DEFAULT_MODEL = "claude-sonnet-4-5";
