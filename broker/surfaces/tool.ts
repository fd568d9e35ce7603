/**
 * What a tool file registers: its zod input and output schemas (the single source of
 * truth: they are what `tools/list` shows and what every call is parsed with), its MCP
 * annotations and a handler that only ever sees parsed arguments.
 */
import type { z } from 'zod';
import type { Envelope } from '../base/envelope.js';

export type SurfaceName = 'agent' | 'transfer';

/** Per-call context handed to a handler. */
export interface CallContext {
  readonly surface: SurfaceName;
  readonly tool: string;
  /** Ties the audit lines, the log lines and an error answer of one call together. */
  readonly correlationId: string;
}

export interface ToolAnnotations {
  readOnlyHint: boolean;
  destructiveHint: boolean;
  idempotentHint: boolean;
  openWorldHint: boolean;
}

/** A tool that only reads from Nextcloud (an open world): it changes nothing, anywhere. */
export const READ_ONLY_TOOL: ToolAnnotations = {
  readOnlyHint: true,
  destructiveHint: false,
  idempotentHint: true,
  openWorldHint: true,
};

/**
 * A tool that adds something on Nextcloud or the broker (a file, a folder, an event, a
 * request) and never removes or overwrites what is there: calling it twice does it twice.
 */
export const ADDING_TOOL: ToolAnnotations = {
  readOnlyHint: false,
  destructiveHint: false,
  idempotentHint: false,
  openWorldHint: true,
};

export interface ToolDefinition<I extends z.ZodType = z.ZodType> {
  readonly name: string;
  readonly title: string;
  readonly description: string;
  readonly input: I;
  readonly output: z.ZodType;
  readonly annotations: ToolAnnotations;
  handler(args: z.output<I>, ctx: CallContext): Promise<Envelope>;
}

/** Collects a surface's tools; each tool file exports a `register…(registry, deps)`. */
export class ToolRegistry {
  readonly #tools = new Map<string, ToolDefinition>();

  add<I extends z.ZodType>(tool: ToolDefinition<I>): void {
    if (this.#tools.has(tool.name)) throw new Error(`tool ${tool.name} registered twice`);
    this.#tools.set(tool.name, tool as unknown as ToolDefinition);
  }

  get(name: string): ToolDefinition | undefined {
    return this.#tools.get(name);
  }

  all(): ToolDefinition[] {
    return [...this.#tools.values()];
  }
}
