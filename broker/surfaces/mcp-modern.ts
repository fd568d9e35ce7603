/**
 * The 2026-07-28 revision of an MCP surface (stateless: no `initialize`, no session; the
 * protocol version, client info and capabilities travel in every request's `_meta`),
 * served by the official v2 SDK (`@modelcontextprotocol/server`): its `createMcpHandler`
 * answers `server/discover`, checks the per-request envelope and the `Mcp-Method` /
 * `Mcp-Name` headers, and stamps `resultType` and the cache hints.
 *
 * The tools are the same ToolCore the 2025-11-25 path serves (mcp-tools.ts). A client
 * that declares the Tasks extension gets a pending `request_access` as a task
 * (mcp-tasks.ts) and polls `tasks/get` instead of `check_access`.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  classifyInboundRequest,
  CLIENT_CAPABILITIES_META_KEY,
  createMcpHandler,
  MissingRequiredClientCapabilityError,
  ProtocolError,
  ProtocolErrorCode,
  Server,
  type McpHttpHandler,
} from '@modelcontextprotocol/server';
import { z } from 'zod';
import { BROKER_VERSION } from '../base/version.js';
import { TASKS_EXTENSION, type PendingTasks } from './mcp-tasks.js';
import { toToolResult, type ToolCore, type ToolResult } from './mcp-tools.js';
import type { JsonObject } from '../base/protocol.js';

/** How long a client may cache `tools/list`: the list never changes while the broker runs. */
const TOOL_LIST_TTL_MS = 300_000;

const TaskIdParamsSchema = z.looseObject({ taskId: z.string().max(100) });

/** Whether this request's own `_meta` capabilities declare the Tasks extension. */
function asksForTasks(envelope: JsonObject | undefined): boolean {
  const capabilities = envelope?.[CLIENT_CAPABILITIES_META_KEY] as
    { extensions?: JsonObject } | undefined;
  const extensions = capabilities?.extensions;
  return typeof extensions === 'object' && extensions !== null && TASKS_EXTENSION in extensions;
}

export function createModernHandler(
  core: ToolCore,
  instructions: string,
  tasks: PendingTasks | undefined,
): McpHttpHandler {
  const factory = (): Server => {
    const server = new Server(
      { name: `nextcloud-access-broker-${core.surface}`, version: BROKER_VERSION },
      {
        capabilities: {
          tools: { listChanged: false },
          ...(tasks ? { extensions: { [TASKS_EXTENSION]: {} } } : {}),
        },
        instructions,
      },
    );
    server.setRequestHandler('tools/list', () => ({
      tools: [...core.listing],
      ttlMs: TOOL_LIST_TTL_MS,
      cacheScope: 'private' as const,
    }));
    server.setRequestHandler('tools/call', async (request, ctx) => {
      const envelope = await core.call(request.params.name, request.params.arguments);
      if (envelope === undefined) {
        throw new ProtocolError(ProtocolErrorCode.InvalidParams, 'unknown tool; call tools/list');
      }
      // A client that declared the Tasks extension on this request waits for the owner
      // as a task; any other client gets today's `pending` answer (never a held call).
      if (tasks && asksForTasks(ctx.mcpReq.envelope)) {
        const task = await tasks.created(request.params.name, envelope);
        // The SDK passes a handler's `resultType` through on tools/call; its types know
        // only the complete and input_required results, not the extension's task.
        if (task) return { resultType: 'task', ...task.modern() } as unknown as ToolResult;
      }
      return toToolResult(envelope);
    });
    if (tasks) {
      server.setRequestHandler('tasks/get', { params: TaskIdParamsSchema }, async (params, ctx) => {
        if (!asksForTasks(ctx.mcpReq.envelope)) {
          throw new MissingRequiredClientCapabilityError({
            requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } },
          });
        }
        const task = await tasks.get(params.taskId);
        if (task === undefined) {
          throw new ProtocolError(
            ProtocolErrorCode.InvalidParams,
            'unknown task; call check_access without arguments to see the requests',
          );
        }
        return { resultType: 'complete', ...task.modern(), ...task.outcome() };
      });
    }
    return server;
  };
  // The default response mode answers with one JSON body: these handlers emit nothing
  // before their result.
  return createMcpHandler(factory, { legacy: 'reject' });
}

const header = (req: IncomingMessage, name: string): string | undefined => {
  const value = req.headers[name];
  return typeof value === 'string' ? value : undefined;
};

/** What mcp-endpoint.ts loads on the first request that may be 2026-07-28. */
export interface ModernPath {
  /** The SDK's classification of a POST: `legacy`, or another route it answers itself. */
  classify(req: IncomingMessage, body: unknown): string;
  serve(req: IncomingMessage, res: ServerResponse, body: unknown): Promise<void>;
}

export function modernPath(
  core: ToolCore,
  instructions: string,
  tasks: PendingTasks | undefined,
): ModernPath {
  const handler = createModernHandler(core, instructions, tasks);
  return {
    classify: (req, body) =>
      classifyInboundRequest({
        httpMethod: 'POST',
        body,
        protocolVersionHeader: header(req, 'mcp-protocol-version'),
        mcpMethodHeader: header(req, 'mcp-method'),
        mcpNameHeader: header(req, 'mcp-name'),
      }).kind,
    serve: (req, res, body) => serveModern(handler, req, res, body),
  };
}

/** Serves one modern POST (its body already parsed and bounded) through the SDK handler. */
async function serveModern(
  handler: McpHttpHandler,
  req: IncomingMessage,
  res: ServerResponse,
  body: unknown,
): Promise<void> {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (typeof value === 'string') headers.set(name, value);
    else if (Array.isArray(value)) for (const v of value) headers.append(name, v);
  }
  const abort = new AbortController();
  res.once('close', () => abort.abort());
  const answer = await handler.fetch(
    new Request(`http://${req.headers.host ?? 'localhost'}${req.url ?? '/'}`, {
      method: 'POST',
      headers,
      signal: abort.signal,
    }),
    { parsedBody: body },
  );
  const text = await answer.text();
  const out: Record<string, string> = {};
  answer.headers.forEach((value, name) => (out[name] = value));
  out['content-length'] = String(Buffer.byteLength(text));
  res.writeHead(answer.status, out);
  res.end(text);
}
