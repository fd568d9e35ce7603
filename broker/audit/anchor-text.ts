/**
 * How an anchor is written: `SEQ:HASH`, the head `seq` and its full 64-digit `hash`.
 * The broker posts `audit anchor SEQ:HASH` to the approval room; the owner passes
 * `SEQ:HASH` to `broker audit verify --anchor` (docs/contracts.md §4).
 */

/** What the posted line starts with. */
export const ANCHOR_PREFIX = 'audit anchor';

export interface Anchor {
  seq: number;
  hash: string;
}

/** `SEQ:HASH`. */
export function anchorText(anchor: Anchor): string {
  return `${anchor.seq}:${anchor.hash}`;
}

/** The line posted to the room: `audit anchor SEQ:HASH`. */
export function anchorLine(anchor: Anchor): string {
  return `${ANCHOR_PREFIX} ${anchorText(anchor)}`;
}

const ANCHOR = /^([1-9][0-9]{0,15}):([0-9a-fA-F]{64})$/;

/**
 * `SEQ:HASH` (the hash in either case, as a chat client may show it) → the anchor;
 * undefined for anything else. Security: the whole hash, never a prefix, so an anchor
 * pins exactly one history.
 */
export function parseAnchor(text: string): Anchor | undefined {
  const m = ANCHOR.exec(text.trim());
  if (m === null) return undefined;
  const seq = Number(m[1]);
  if (!Number.isSafeInteger(seq)) return undefined;
  return { seq, hash: (m[2] ?? '').toLowerCase() };
}
