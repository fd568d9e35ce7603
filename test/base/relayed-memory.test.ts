/**
 * The relay's memory bound: a minor collection once every RELEASE_EVERY_BYTES relayed,
 * counted across transfers, and V8's collector reached without exposing it globally.
 */
import { describe, expect, it } from 'vitest';
import { releaser, RELEASE_EVERY_BYTES, type Collect } from '../../broker/base/relayed-memory.js';

const CHUNK = 64 * 1024;

function counting(): { collector: () => Collect; runs: string[]; made: () => number } {
  const runs: string[] = [];
  let made = 0;
  return {
    collector: () => {
      made += 1;
      return (options) => runs.push(`${options.type}/${options.execution}`);
    },
    runs,
    made: () => made,
  };
}

describe('releaser', () => {
  it('collects once per RELEASE_EVERY_BYTES, whatever the chunk sizes', () => {
    const c = counting();
    const relayed = releaser(RELEASE_EVERY_BYTES, c.collector);
    for (let sent = 0; sent < 3 * RELEASE_EVERY_BYTES; sent += CHUNK) relayed(CHUNK);
    expect(c.runs).toEqual(['minor/sync', 'minor/sync', 'minor/sync']);
    relayed(RELEASE_EVERY_BYTES - 1);
    expect(c.runs).toHaveLength(3);
    relayed(1);
    expect(c.runs).toHaveLength(4);
    expect(c.made()).toBe(1);
  });

  it('reaches nothing until the first collection is due', () => {
    const c = counting();
    const relayed = releaser(RELEASE_EVERY_BYTES, c.collector);
    relayed(RELEASE_EVERY_BYTES - CHUNK);
    expect(c.made()).toBe(0);
  });

  it("V8's collector runs, and the broker's global scope still has no gc", () => {
    const relayed = releaser(CHUNK);
    relayed(CHUNK);
    relayed(CHUNK);
    expect((globalThis as { gc?: unknown }).gc).toBeUndefined();
  });
});
