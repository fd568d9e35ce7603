/**
 * One MCP surface over stateless Streamable HTTP, serving both protocol revisions on the
 * same endpoint, chosen per request by the v2 SDK's own classifier: a request that
 * carries the 2026-07-28 envelope in its `_meta` (or names that revision in its
 * MCP-Protocol-Version header) goes to the SDK's handler (mcp-modern.ts); everything
 * else is 2025-11-25 traffic (`initialize`, or a call with no envelope) and is served
 * here.
 *
 * The 2025-11-25 path gives every POST a fresh server and transport (no session state,
 * so a broker restart never breaks a client); the transport (mcp-transport.ts) writes
 * the JSON answer straight to node's response, which is what keeps a plain tool call
 * cheap. It uses the v1 SDK's low-level `Server` so that mcp-tools.ts stays the one
 * place where a call's arguments are parsed and its result leaves.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv-provider.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
  SUPPORTED_PROTOCOL_VERSIONS,
} from '@modelcontextprotocol/sdk/types.js';
import type { SurfaceName } from '../base/call.js';
import { BROKER_VERSION } from '../base/version.js';
import type { ModernPath } from './mcp-modern.js';
import { pendingTasks, type RequestTimes } from './mcp-tasks.js';
import { createToolCore, toToolResult, type SurfaceDeps } from './mcp-tools.js';
import { PostTransport } from './mcp-transport.js';
import type { ToolRegistry } from './tool.js';

export type { SurfaceDeps } from './mcp-tools.js';

export interface McpSurface {
  handle(req: IncomingMessage, res: ServerResponse, body: unknown): Promise<void>;
}

export interface SurfaceOptions {
  /** A request's times, for its task (surfaces with request_access only). */
  readonly requestTimes?: (request: number) => RequestTimes | undefined;
}

/**
 * The `_meta` key that claims the 2026-07-28 envelope (the v2 SDK's
 * PROTOCOL_VERSION_META_KEY; test/surfaces/mcp-revisions.test.ts holds the two equal).
 * Spelled here so that a broker only ever spoken to in 2025-11-25 never loads the v2 SDK
 * (its import costs start-up time and some 30 MiB).
 */
export const MODERN_CLAIM = 'io.modelcontextprotocol/protocolVersion';

/**
 * 2025 traffic for certain, decided without the SDK's classifier (which validates the
 * whole message and costs about as much as the rest of a `list_instances` call): no
 * 2026 envelope claim in `params._meta`, and no header naming a version other than a
 * 2025 one. Anything else goes to the classifier, which has the last word.
 */
function plainlyLegacy(req: IncomingMessage, body: unknown): boolean {
  const version = req.headers['mcp-protocol-version'];
  if (version !== undefined && !SUPPORTED_PROTOCOL_VERSIONS.includes(String(version))) return false;
  const params = (body as { params?: unknown } | null)?.params;
  const meta = (params as { _meta?: unknown } | null | undefined)?._meta;
  return typeof meta !== 'object' || meta === null || !(MODERN_CLAIM in meta);
}

export function createMcpSurface(
  name: SurfaceName,
  registry: ToolRegistry,
  deps: SurfaceDeps,
  instructions: string,
  options: SurfaceOptions = {},
): McpSurface {
  const core = createToolCore(name, registry, deps);
  const tasks =
    options.requestTimes === undefined ? undefined : pendingTasks(core, options.requestTimes);
  let modern: Promise<ModernPath> | undefined;
  const modernPath = (): Promise<ModernPath> =>
    (modern ??= import('./mcp-modern.js').then((m) => m.modernPath(core, instructions, tasks)));
  const listing = { tools: core.listing };

  // One validator for every per-request Server: the SDK otherwise compiles a new Ajv
  // instance for each request (the server never validates anything with it here).
  const jsonSchemaValidator = new AjvJsonSchemaValidator();
  const build = (): Server => {
    const server = new Server(
      { name: `nextcloud-access-broker-${name}`, version: BROKER_VERSION },
      { capabilities: { tools: { listChanged: false } }, instructions, jsonSchemaValidator },
    );
    server.setRequestHandler(ListToolsRequestSchema, () => listing);
    server.setRequestHandler(CallToolRequestSchema, async (request) => {
      const envelope = await core.call(request.params.name, request.params.arguments);
      if (envelope === undefined) {
        throw new McpError(ErrorCode.InvalidParams, 'unknown tool; call tools/list');
      }
      return toToolResult(envelope);
    });
    return server;
  };

  return {
    async handle(req, res, body) {
      if (!plainlyLegacy(req, body)) {
        const path = await modernPath();
        // The SDK's classifier has the last word: 2025 traffic it finds goes on below;
        // the modern path serves the rest, its malformed requests included.
        if (path.classify(req, body) !== 'legacy') {
          await path.serve(req, res, body);
          return;
        }
      }
      // Security: a new Server and transport for every POST. The schemas, the handlers'
      // code and the validator above are shared because they hold nothing of a call; a
      // Server holds per-call state (the client's capabilities from initialize, abort
      // controllers and answers keyed by the caller's JSON-RPC id), so one shared between
      // callers would let one caller's id or `notifications/cancelled` reach another's call.
      const server = build();
      const transport = new PostTransport(req, res);
      res.once('close', () => void server.close());
      await server.connect(transport);
      await transport.handle(body);
    },
  };
}
