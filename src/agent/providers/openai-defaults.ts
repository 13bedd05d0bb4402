/**
 * @module agent/providers/openai-defaults
 * The openai provider's defaults, apart from the adapter so the start-up check (`select.ts`) reads
 * them without loading the `openai` SDK.
 */

/** Where `provider.name: openai` talks when `provider.base_url` is not set. */
export const OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1";
/** The model asked for when `provider.model` is not set (only meaningful at the default base URL). */
export const OPENAI_DEFAULT_MODEL = "gpt-4.1-mini";
/** The environment variable read for the key when `provider.api_key_env` is not set. */
export const OPENAI_DEFAULT_KEY_ENV = "OPENAI_API_KEY";
