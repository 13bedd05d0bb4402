/**
 * @module side/mcp
 * The MCP SDK's runtime parts airlock uses (tool/mcp/sdk.ts), as one module: the entry of the `mcp` side bundle.
 */
export { Client } from "@modelcontextprotocol/sdk/client/index.js";
export { ReadBuffer, serializeMessage } from "@modelcontextprotocol/sdk/shared/stdio.js";
export { ErrorCode, McpError, ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
