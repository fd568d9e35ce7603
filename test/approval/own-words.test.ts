/**
 * The approval code never reads an event's words through matrix-js-sdk's `getContent`,
 * which answers with an edit's words whenever the SDK applied one (a replacement the
 * homeserver bundles in `unsigned`, or a timeline edit of any session of the account;
 * docs/matrix-behaviour.md). A source check, so that a later change cannot bring it back.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '../../broker/approval');
const ACCESSOR = new RegExp(['get', 'Content'].join('') + '\\b');

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory()
      ? sources(join(dir, e.name))
      : e.name.endsWith('.ts')
        ? [join(dir, e.name)]
        : [],
  );
}

describe("the approval code reads only an event's own words", () => {
  it('finds the sources (the check is not vacuous)', () => {
    expect(sources(ROOT).length).toBeGreaterThan(30);
    expect(ACCESSOR.test('event.' + 'get' + 'Content()')).toBe(true);
  });

  it("no file of broker/approval names the SDK's replaced-content accessor", () => {
    const offenders = sources(ROOT).filter((f) => ACCESSOR.test(readFileSync(f, 'utf8')));
    expect(offenders).toEqual([]);
  });
});
