/**
 * Whether the grants an operation relies on are in force: the pipeline asks before the
 * intent line, right before the call and when a step rechecks. Pure: a snapshot of the
 * unended grants and the time in.
 */
import type { GrantRecord } from '../base/domain.js';

/** The earliest expiry among these grants (ms), or undefined if none is active. */
export function earliestExpiry(
  unended: readonly GrantRecord[],
  ids: readonly number[],
  now: number,
): number | undefined {
  if (ids.length === 0) return undefined;
  const wanted = new Set(ids);
  let earliest: number | undefined;
  for (const g of unended) {
    if (!(now < g.expiresAt)) continue;
    if (wanted.has(g.id) && (earliest === undefined || g.expiresAt < earliest))
      earliest = g.expiresAt;
  }
  return earliest;
}

/** Every grant id is active now (state active and now < expiresAt). */
export function grantsLive(
  unended: readonly GrantRecord[],
  ids: readonly number[],
  now: number,
): boolean {
  if (ids.length === 0) return true;
  return ids.every((id) => {
    const g = unended.find((grant) => grant.id === id);
    return g !== undefined && g.state === 'active' && now < g.expiresAt;
  });
}
