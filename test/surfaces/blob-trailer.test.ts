/**
 * The trailer that says why a download was cut carries the envelope as a header value:
 * printable ASCII only (nothing can end the field or reorder what a terminal shows), and
 * it parses back to exactly the envelope sent.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { refused } from '../../broker/base/envelope.js';
import { envelopeTrailer } from '../../broker/surfaces/blobs.js';

describe('envelopeTrailer', () => {
  it('is printable ASCII and parses back to the envelope, whatever the message holds', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), fc.string({ unit: 'grapheme' }), (a, b) => {
        const envelope = refused('grant_ended', `"Docs/${a}" ${b}\r\n\u202e`, { hint: b });
        const value = envelopeTrailer(envelope);
        expect(value).toMatch(/^[\x20-\x7e]*$/);
        expect(JSON.parse(value)).toEqual(envelope);
      }),
    );
  });
});
