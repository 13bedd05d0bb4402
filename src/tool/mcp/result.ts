/**
 * @module tool/mcp/result
 * An MCP `CallToolResult` as airlock's tool result: `structuredContent` when the server sent it,
 * else the content blocks as text (non-text blocks described in a line, never dumped as base64).
 */

interface ContentBlock {
  type: string;
  text?: string;
  mimeType?: string;
  data?: string;
  uri?: string;
  name?: string;
  resource?: { uri?: string; mimeType?: string; text?: string; blob?: string };
}

/** The result shape we read (a subset of the SDK's `CallToolResult`, tolerant of extra fields). */
export interface McpCallResult {
  content?: unknown[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
  /** Set by airlock, not the server: repository metadata quarantined after the call (launcher/git-meta.ts). */
  quarantined?: string[];
  /** Set by airlock: one line per workspace root whose check after the call was incomplete (too many folders). */
  checkIncomplete?: string[];
}

/** One content block as text: text as is; images/audio/blobs as a one-line description; resources by text or URI. */
function blockText(b: ContentBlock): string {
  switch (b.type) {
    case "text":
      return b.text ?? "";
    case "image":
    case "audio": {
      const bytes = b.data ? Math.floor((b.data.length * 3) / 4) : 0;
      return `[${b.type} ${b.mimeType ?? "?"}, ${bytes} bytes, not shown]`;
    }
    case "resource":
      if (typeof b.resource?.text === "string") return b.resource.text;
      return `[resource ${b.resource?.uri ?? "?"}${b.resource?.mimeType ? ` (${b.resource.mimeType})` : ""}, binary, not shown]`;
    case "resource_link":
      return `[resource_link ${b.uri ?? "?"}${b.name ? ` (${b.name})` : ""}]`;
    default:
      return `[${b.type} content, not shown]`;
  }
}

/** The content blocks joined with newlines. */
export function contentText(result: McpCallResult): string {
  const blocks = (result.content ?? []).filter((b): b is ContentBlock => typeof b === "object" && b !== null && "type" in b);
  return blocks.map(blockText).join("\n");
}

/** The value a successful call returns: `structuredContent` when present, else the joined text. */
export function resultValue(result: McpCallResult): unknown {
  if (result.structuredContent !== undefined && result.structuredContent !== null) return result.structuredContent;
  return contentText(result);
}
