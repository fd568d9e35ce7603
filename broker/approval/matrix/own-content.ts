/**
 * The words an event itself carries, never another event's. matrix-js-sdk's usual
 * content accessor answers with the content of the event's latest edit whenever it has
 * one (a replacement the homeserver bundles in `unsigned`, which is neither signed nor
 * encrypted, or an edit in the timeline from any session of the same account;
 * docs/matrix-behaviour.md), so the approval code never uses it: it reads the decrypted
 * payload of an encrypted event, and the content as received of a clear one.
 */
import type { MatrixEvent } from 'matrix-js-sdk';

/** The content the event itself carries (undefined: encrypted and not decrypted). */
export function ownContent(event: MatrixEvent): unknown {
  // Security: the decrypted payload is what the sender's key encrypted; a replacement
  // (`makeReplaced`) never touches it.
  if (event.isEncrypted()) return event.getClearContent() ?? undefined;
  return event.getWireContent();
}

/** The event ids that the event's relations name: in clear on the wire, and in its own content. */
export function relationTargets(event: MatrixEvent): string[] {
  const targets = new Set<string>();
  for (const content of [event.getWireContent(), ownContent(event)]) {
    const rel = (content as { 'm.relates_to'?: unknown } | undefined)?.['m.relates_to'];
    const target = (rel as { event_id?: unknown } | undefined)?.event_id;
    if (typeof target === 'string') targets.add(target);
  }
  return [...targets];
}
