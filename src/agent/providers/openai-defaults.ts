/**
 * @module agent/providers/openai-defaults
 * The openai provider's defaults, apart from the adapter so the start-up check (`select.ts`) reads
 * them without loading the `openai` SDK.
 */
import { VERSION as OPENAI_SDK_VERSION } from "openai/version";

/** Where `provider.name: openai` talks when `provider.base_url` is not set. */
export const OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1";
/** The model asked for when `provider.model` is not set (only meaningful at the default base URL). */
export const OPENAI_DEFAULT_MODEL = "gpt-4.1-mini";
/** The environment variable read for the key when `provider.api_key_env` is not set. */
export const OPENAI_DEFAULT_KEY_ENV = "OPENAI_API_KEY";
/**
 * The `User-Agent` of every request to an `openai` / `openai-responses` provider: the one the `openai` SDK
 * sends from source (`OpenAI/JS <sdk version>`, e.g. `OpenAI/JS 6.49.0`). Set explicitly by the adapter
 * (the SDK builds it from its client class's `name`, which the binary's minified bundle renames: it sent
 * `m/JS 6.49.0`) and sent by the early request too. `openai/version` is one constant, not the SDK. (The
 * Anthropic SDK's own is a literal, `Anthropic/JS <version>`, which minifying keeps.)
 */
export const OPENAI_USER_AGENT = `OpenAI/JS ${OPENAI_SDK_VERSION}`;
