import { describe, expect, it } from 'vitest';
import { parseCapabilities } from '../../broker/nextcloud/capabilities.js';
import { NextcloudError } from '../../broker/nextcloud/errors.js';

const doc = (files: unknown) =>
  JSON.stringify({ ocs: { meta: { status: 'ok' }, data: { capabilities: { files } } } });

describe('capabilities', () => {
  it('reads undelete, locking and versioning', () => {
    expect(
      parseCapabilities(
        doc({ undelete: true, locking: '1.0', bigfilechunking: true, versioning: true }),
      ),
    ).toEqual({ undelete: true, locking: true, versioning: true, maxChunkSize: null });
  });

  it('versions count as on only for an explicit true (undo restores only from a kept version)', () => {
    for (const versioning of ['true', 1, null, undefined, false])
      expect(parseCapabilities(doc({ versioning: versioning as never })).versioning).toBe(false);
  });

  it('reads the largest chunk Nextcloud 31+ announces; anything odd is unsaid', () => {
    const chunked = (max_size: unknown) =>
      parseCapabilities(doc({ chunked_upload: { max_size, max_parallel_count: 5 } })).maxChunkSize;
    expect(chunked(104857600)).toBe(104857600);
    for (const odd of ['104857600', -1, 0, 1024, 1.5, null]) expect(chunked(odd)).toBeNull();
    expect(parseCapabilities(doc({ chunked_upload: 'yes', undelete: true })).undelete).toBe(true);
  });

  it('trash counts as on only for an explicit true (else a delete could be permanent)', () => {
    for (const undelete of ['true', 1, null, undefined])
      expect(parseCapabilities(doc({ undelete: undelete as never })).undelete).toBe(false);
    expect(parseCapabilities(doc(undefined))).toEqual({
      undelete: false,
      locking: false,
      versioning: false,
      maxChunkSize: null,
    });
    expect(parseCapabilities(doc({ locking: '' })).locking).toBe(false);
    expect(parseCapabilities(doc({ locking: true })).locking).toBe(false);
  });

  it.each([
    ['not JSON', '<html>'],
    ['no ocs envelope', '{"data":{}}'],
    ['capabilities that are not an object', JSON.stringify({ ocs: { data: { capabilities: 1 } } })],
  ])('refuses %s as bad_response', (_name, text) => {
    let caught: unknown;
    try {
      parseCapabilities(text);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(NextcloudError);
    expect((caught as NextcloudError).code).toBe('bad_response');
  });
});
