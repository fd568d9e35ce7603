/**
 * What an audit line says an operation was on: the agent's spelling before the wall
 * decided, the wall's canonical values after.
 */
import type { OperationTargetFields } from '../audit/events.js';
import type { WallOp } from '../wall.js';

/** What a refused line says the operation was on: the agent's spelling, as it came. */
export interface AskedTarget {
  readonly path?: unknown;
  readonly from?: unknown;
  readonly to?: unknown;
  readonly kind?: string;
  readonly collection?: unknown;
}

/** What an audit line says the operation was on, before the wall decided. */
export function pathFields(op: WallOp): AskedTarget {
  switch (op.op) {
    case 'move':
      return { from: op.from, to: op.to };
    case 'collection':
      return { kind: op.kind, collection: op.name };
    case 'collections':
      return { kind: op.kind };
    default:
      return { path: op.path };
  }
}

/** The same, with the canonical values the wall returned. */
export function decidedPathFields(
  op: WallOp,
  paths: readonly string[],
): OperationTargetFields & { collections?: string[] } {
  switch (op.op) {
    case 'move':
      return { from: paths[0], to: paths[1] };
    case 'collection':
      return { kind: op.kind, collection: paths[0] };
    case 'collections':
      return { kind: op.kind, collections: [...paths] };
    default:
      return { path: paths[0] };
  }
}
