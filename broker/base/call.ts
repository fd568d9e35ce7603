/** Who is calling: the surface and tool of one call, and the id that ties its traces together. */

export type SurfaceName = 'agent' | 'transfer';

/** Per-call context: handed to a tool handler and through it to the pipeline. */
export interface CallContext {
  readonly surface: SurfaceName;
  readonly tool: string;
  /** Ties the audit lines, the log lines and an error answer of one call together. */
  readonly correlationId: string;
}
