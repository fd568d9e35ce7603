/** What the wall's example-based suites share: a clock, grants, operations, verdicts. */
import type { GrantView, Mode } from '../../broker/base/domain.js';
import type { WallDecision, WallOp } from '../../broker/wall.js';

export const NOW = 1_700_000_000_000;
export const HOUR = 3_600_000;
export const closed = { discovery: false } as const;
export const open = { discovery: true } as const;

let nextId = 1;
/** A grant on `personal`, expiring in an hour, with a fresh id. */
export function grant(
  path: string,
  mode: Mode = 'read',
  extra: Partial<GrantView> = {},
): GrantView {
  const id = nextId++;
  return {
    id,
    requestId: 100 + id,
    instance: 'personal',
    path,
    mode,
    expiresAt: NOW + HOUR,
    ...extra,
  };
}

export const read = (path: unknown, instance = 'personal'): WallOp => ({
  op: 'read',
  instance,
  path,
});
export const write = (path: unknown, instance = 'personal'): WallOp => ({
  op: 'write',
  instance,
  path,
});
export const list = (path: unknown, instance = 'personal'): WallOp => ({
  op: 'list',
  instance,
  path,
});
export const search = (path: unknown, instance = 'personal'): WallOp => ({
  op: 'search',
  instance,
  path,
});
export const move = (from: unknown, to: unknown): WallOp => ({
  op: 'move',
  instance: 'personal',
  from,
  to,
});

export function allowed(d: WallDecision): Extract<WallDecision, { ok: true }> {
  if (!d.ok) throw new Error(`expected allowed, got ${d.code}: ${d.reason}`);
  return d;
}
export function refused(d: WallDecision): Extract<WallDecision, { ok: false }> {
  if (d.ok) throw new Error(`expected refused, got ${JSON.stringify(d)}`);
  return d;
}

/** What canonicalPath makes of a one-path op's path (for ops spelled canonically but for a leading slash). */
export function canonical(op: WallOp): string {
  const p = 'path' in op ? String(op.path) : '';
  return p.startsWith('/') ? p.slice(1) : p;
}
