/**
 * What both MCP revisions of a surface share: the tool list (built once) and the one
 * place where a call's arguments are parsed and its result leaves. Invalid arguments
 * become a `refused` envelope (not an SDK's free-text error), every handler runs inside
 * one error boundary, and every result is checked against the tool's output schema.
 * mcp-endpoint.ts serves this over 2025-11-25, mcp-modern.ts over 2026-07-28.
 */
import { z } from 'zod';
import type { CallContext, SurfaceName } from '../base/call.js';
import { compact, internalError, refused, type Envelope } from '../base/envelope.js';
import { errorDetail } from '../base/errors.js';
import type { Logger } from '../base/log.js';
import type { MetricsPort } from '../base/metrics.js';
import { scrubDeep } from '../base/scrub.js';
import { portableSchema } from './portable-schema.js';
import { secretField } from './secret-arguments.js';
import type { ToolAnnotations, ToolDefinition, ToolRegistry } from './tool.js';
import type { JsonObject } from '../base/protocol.js';

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

/** The MCP CallToolResult of an envelope. */
export interface ToolResult {
  content: { type: 'text'; text: string }[];
  structuredContent: Envelope;
  isError: boolean;
  [key: string]: unknown;
}

/** One entry of `tools/list`. */
export interface ListedTool {
  name: string;
  title: string;
  description: string;
  inputSchema: { type: 'object'; [k: string]: unknown };
  outputSchema: { type: 'object'; [k: string]: unknown };
  annotations: ToolAnnotations & { title: string };
  [key: string]: unknown;
}

/**
 * A tool's JSON Schema (draft 2020-12, zod's default target), with one `type` per
 * schema (portable-schema.ts). The `$schema` key is left out: MCP 2025-11-25 and
 * 2026-07-28 both read a schema without one as 2020-12.
 */
function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): JsonObject {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: 'any' });
  return portableSchema(rest as JsonObject);
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
export function toToolResult(envelope: Envelope): ToolResult {
  const body = compact(envelope);
  return {
    content: [{ type: 'text' as const, text: JSON.stringify(body) }],
    structuredContent: body,
    isError: envelope.status === 'refused' || envelope.status === 'error',
  };
}

export interface ToolCore {
  readonly surface: SurfaceName;
  /** The `tools/list` entries, built once. */
  readonly listing: readonly ListedTool[];
  /** Runs one call; `undefined` when no tool has that name. The envelope is scrubbed. */
  call(name: string, args: unknown): Promise<Envelope | undefined>;
}

export function createToolCore(
  surface: SurfaceName,
  registry: ToolRegistry,
  deps: SurfaceDeps,
): ToolCore {
  // The tool list never changes at runtime: build the JSON Schemas once.
  const listing = registry.all().map((tool) => ({
    name: tool.name,
    title: tool.title,
    description: tool.description,
    inputSchema: jsonSchema(tool.input, 'input') as ListedTool['inputSchema'],
    outputSchema: jsonSchema(tool.output, 'output') as ListedTool['outputSchema'],
    annotations: { title: tool.title, ...tool.annotations },
  }));

  const run = async (tool: ToolDefinition, args: unknown, ctx: CallContext): Promise<Envelope> => {
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
        surface,
        tool: tool.name,
        correlation_id: ctx.correlationId,
        error: errorDetail(error),
      });
      return internalError(ctx.correlationId);
    }
    const checked = tool.output.safeParse(envelope);
    if (!checked.success) {
      deps.logger.error('tool result does not match its output schema', {
        surface,
        tool: tool.name,
        correlation_id: ctx.correlationId,
        issues: describeIssues(checked.error),
      });
      return internalError(ctx.correlationId);
    }
    return envelope;
  };

  return {
    surface,
    listing,
    async call(name, args) {
      const tool = registry.get(name);
      if (tool === undefined) return undefined;
      const ctx: CallContext = { surface, tool: tool.name, correlationId: deps.correlationId() };
      const envelope = await run(tool, args, ctx);
      deps.metrics?.answered(surface, tool.name, envelope);
      // Security: whatever a result echoes (an agent-planted token in a path, a server
      // message), no configured secret leaves in it.
      return scrubDeep(envelope, deps.scrub);
    },
  };
}
