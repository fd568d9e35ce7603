/**
 * One MCP surface over stateless Streamable HTTP: every POST gets a fresh MCP server and
 * transport (no session state, so a broker restart never breaks a client); the
 * transport (mcp-transport.ts) writes the JSON answer straight to node's response.
 *
 * We use the SDK's low-level `Server` rather than `McpServer` so that this file is the one
 * place where a call's arguments are parsed and its result leaves: invalid arguments
 * become a `refused` envelope (not the SDK's free-text error), every handler runs inside
 * one error boundary, and every result is checked against the tool's output schema.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv-provider.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
} from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { CallContext, SurfaceName } from '../base/call.js';
import { compact, internalError, refused, type Envelope } from '../base/envelope.js';
import { errorDetail } from '../base/errors.js';
import type { Logger } from '../base/log.js';
import type { MetricsPort } from '../base/metrics.js';
import { scrubDeep } from '../base/scrub.js';
import { BROKER_VERSION } from '../base/version.js';
import { PostTransport } from './mcp-transport.js';
import { secretField } from './secret-arguments.js';
import type { ToolDefinition, ToolRegistry } from './tool.js';

export interface SurfaceDeps {
  readonly logger: Logger;
  readonly correlationId: () => string;
  /** Removes configured secrets from any text (applied to every result string). */
  readonly scrub: (text: string) => string;
  /** Whether a text holds a configured secret in any form `scrub` removes. */
  readonly holdsSecret: (text: string) => boolean;
  /**
   * Records a call refused before it reached the pipeline (bad arguments) and returns
   * what to answer: `envelope`, or `rate_limited` past the surface's refusal budget.
   */
  readonly onInvalidArguments: (
    ctx: CallContext,
    message: string,
    envelope: Envelope,
  ) => Promise<Envelope>;
  /** The same for a call refused because `field` held a secret (the field, never the value). */
  readonly onSecretInArguments: (
    ctx: CallContext,
    field: string,
    envelope: Envelope,
  ) => Promise<Envelope>;
  /** Counts each answer by tool, status and code (default: nothing counted). */
  readonly metrics?: MetricsPort;
}

export interface McpSurface {
  handle(req: IncomingMessage, res: ServerResponse, body: unknown): Promise<void>;
}

type JsonObject = Record<string, unknown>;

function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): JsonObject {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: 'any' });
  return rest as JsonObject;
}

/** Zod issues as one short line: `items.0.mode: Invalid option …`. */
export function describeIssues(error: z.ZodError): string {
  const text = error.issues
    .slice(0, 5)
    .map((i) => (i.path.length > 0 ? `${i.path.join('.')}: ${i.message}` : i.message))
    .join('; ');
  return text.length > 400 ? `${text.slice(0, 399)}…` : text;
}

/**
 * The MCP CallToolResult for an envelope. `isError` is true when the call did not do what
 * was asked (`refused`, `error`) and false for `ok` and `pending` (docs/contracts.md §5),
 * so a client that reads only the flag still sees a refusal as one.
 */
export function toToolResult(envelope: Envelope): {
  content: { type: 'text'; text: string }[];
  structuredContent: Record<string, unknown>;
  isError: boolean;
} {
  const body = compact(envelope);
  return {
    content: [{ type: 'text' as const, text: JSON.stringify(body) }],
    structuredContent: body as Record<string, unknown>,
    isError: envelope.status === 'refused' || envelope.status === 'error',
  };
}

export function createMcpSurface(
  name: SurfaceName,
  registry: ToolRegistry,
  deps: SurfaceDeps,
  instructions: string,
): McpSurface {
  // The tool list never changes at runtime: build the JSON Schemas once.
  const listing = registry.all().map((tool) => ({
    name: tool.name,
    title: tool.title,
    description: tool.description,
    inputSchema: jsonSchema(tool.input, 'input') as { type: 'object'; [k: string]: unknown },
    outputSchema: jsonSchema(tool.output, 'output') as { type: 'object'; [k: string]: unknown },
    annotations: { title: tool.title, ...tool.annotations },
  }));

  const call = async (tool: ToolDefinition, args: unknown, ctx: CallContext): Promise<Envelope> => {
    // Security: the one boundary every call passes, before its arguments are parsed,
    // audited, shown to the owner or sent anywhere (see secret-arguments.ts).
    const field = secretField(args ?? {}, deps.holdsSecret);
    if (field !== undefined) {
      const envelope = refused(
        'secret_in_arguments',
        `${field} holds a secret of this broker (a token or a password, in some spelling); the call was refused before anything was recorded, shown to the owner or sent to Nextcloud`,
        {
          hint: `never put a token or a password into a tool argument: remove it from ${field} and call again`,
          field,
        },
      );
      return deps.onSecretInArguments(ctx, field, envelope);
    }
    const parsed = tool.input.safeParse(args ?? {});
    if (!parsed.success) {
      const message = `invalid arguments: ${describeIssues(parsed.error)}; fix them and call again`;
      return deps.onInvalidArguments(ctx, message, refused('invalid_arguments', message));
    }
    let envelope: Envelope;
    try {
      envelope = await tool.handler(parsed.data, ctx);
    } catch (error) {
      // Security: the one error boundary. Nothing of an unexpected error crosses the
      // wire; the details go to the scrubbing logger under the correlation id.
      deps.logger.error('tool failed', {
        surface: name,
        tool: tool.name,
        correlation_id: ctx.correlationId,
        error: errorDetail(error),
      });
      return internalError(ctx.correlationId);
    }
    const checked = tool.output.safeParse(envelope);
    if (!checked.success) {
      deps.logger.error('tool result does not match its output schema', {
        surface: name,
        tool: tool.name,
        correlation_id: ctx.correlationId,
        issues: describeIssues(checked.error),
      });
      return internalError(ctx.correlationId);
    }
    return envelope;
  };

  // One validator for every per-request Server: the SDK otherwise compiles a new Ajv
  // instance for each request (the server never validates anything with it here).
  const jsonSchemaValidator = new AjvJsonSchemaValidator();
  const build = (): Server => {
    const server = new Server(
      { name: `nextcloud-access-broker-${name}`, version: BROKER_VERSION },
      { capabilities: { tools: { listChanged: false } }, instructions, jsonSchemaValidator },
    );
    server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: listing }));
    server.setRequestHandler(CallToolRequestSchema, async (request) => {
      const tool = registry.get(request.params.name);
      if (tool === undefined) {
        throw new McpError(ErrorCode.InvalidParams, 'unknown tool; call tools/list');
      }
      const ctx: CallContext = {
        surface: name,
        tool: tool.name,
        correlationId: deps.correlationId(),
      };
      // Security: whatever a result echoes (an agent-planted token in a path, a server
      // message), no configured secret leaves in it.
      const envelope = await call(tool, request.params.arguments, ctx);
      deps.metrics?.answered(name, tool.name, envelope);
      return toToolResult(scrubDeep(envelope, deps.scrub));
    });
    return server;
  };

  return {
    async handle(req, res, body) {
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
