/**
 * @module tool/mcp/sdk
 * The MCP SDK's runtime parts (client, error classes, notification schema, stdio framing), loaded on the
 * first server start rather than when airlock starts: the SDK and its schemas cost more at start than the
 * rest of `airlock run` before its first model request (docs/performance.md, cold start). In the binary the SDK
 * is a side bundle (side/modules.ts), embedded compressed.
 */
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { ReadBuffer, serializeMessage } from "@modelcontextprotocol/sdk/shared/stdio.js";
import type { ErrorCode, McpError, ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { AirlockError } from "../../errors.ts";
import { side } from "../../side/modules.ts";

/** What airlock uses of the SDK at run time. */
export interface McpSdk {
  Client: typeof Client;
  McpError: typeof McpError;
  ErrorCode: typeof ErrorCode;
  ToolListChangedNotificationSchema: typeof ToolListChangedNotificationSchema;
  ReadBuffer: typeof ReadBuffer;
  serializeMessage: typeof serializeMessage;
}

let loaded: McpSdk | undefined;
let loading: Promise<McpSdk> | undefined;

/** Loads the SDK once (later calls share the first load). Rejects when a module cannot be loaded. */
export function loadMcpSdk(): Promise<McpSdk> {
  loading ??= side.mcp().then((m) => {
    loaded = {
      Client: m.Client,
      McpError: m.McpError,
      ErrorCode: m.ErrorCode,
      ToolListChangedNotificationSchema: m.ToolListChangedNotificationSchema,
      ReadBuffer: m.ReadBuffer,
      serializeMessage: m.serializeMessage,
    };
    return loaded;
  });
  return loading;
}

/**
 * The loaded SDK, for code that runs only once a server was started ({@link loadMcpSdk} resolved).
 * @throws AirlockError `internal` when it was not loaded yet.
 */
export function mcpSdk(): McpSdk {
  if (!loaded) throw new AirlockError("internal", "the MCP SDK is used before it was loaded (loadMcpSdk)");
  return loaded;
}
