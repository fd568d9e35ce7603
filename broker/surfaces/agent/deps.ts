import type { CollectionOperations } from '../../operations/collections.js';
import type { FileOperations } from '../../operations/files.js';
import type { AccessRequests } from '../../operations/requests.js';

/** What the agent surface's tools may use: the pipeline's verbs, never a client. */
export interface AgentToolDeps {
  readonly files: FileOperations;
  readonly collections: CollectionOperations;
  readonly requests: AccessRequests;
  /** Names and discovery flags only (no URL, user or secret reaches the tools). */
  readonly instances: ReadonlyMap<string, { readonly discovery: boolean }>;
}
