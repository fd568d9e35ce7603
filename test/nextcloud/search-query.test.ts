/**
 * The SEARCH body: strict XML (every value escaped, nothing XML cannot carry), and a LIKE
 * literal that matches the agent's term literally, checked against SQLite's LIKE as the
 * fake models it (the differential suite holds the fake to a real server).
 */
import fc from 'fast-check';
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { describe, expect, it } from 'vitest';
import { nameMatches } from '../../broker/base/search-term.js';
import { NextcloudError } from '../../broker/nextcloud/errors.js';
import {
  escapeXmlText,
  likeLiteral,
  searchBody,
  type SearchQuery,
} from '../../broker/nextcloud/search-query.js';
import { sqliteLike } from '../../fakes/nextcloud/dav/search.js';

const parser = new XMLParser({
  removeNSPrefix: true,
  ignoreAttributes: true,
  parseTagValue: false,
  trimValues: false,
  processEntities: true,
  htmlEntities: false,
});

const QUERY: SearchQuery = {
  scope: '/files/alice/Docs',
  term: 'report',
  folderId: '73',
  limit: 101,
  offset: 0,
};

interface Parsed {
  scope: string;
  literal: string;
  limit: string;
  offset: string;
}

/** The values a server reads from the body, after XML decoding. */
function read(body: string): Parsed {
  expect(XMLValidator.validate(body)).toBe(true);
  const doc = parser.parse(body) as {
    searchrequest: {
      basicsearch: {
        from: { scope: { href: string } };
        where: { and: { like: { literal: string } } };
        limit: { nresults: string; firstresult: string };
      };
    };
  };
  const basic = doc.searchrequest.basicsearch;
  return {
    scope: basic.from.scope.href,
    literal: basic.where.and.like.literal,
    limit: basic.limit.nresults,
    offset: basic.limit.firstresult,
  };
}

function invalid(run: () => unknown): void {
  expect(run).toThrow(NextcloudError);
  try {
    run();
  } catch (error) {
    expect((error as NextcloudError).code).toBe('invalid_argument');
  }
}

describe('the LIKE literal', () => {
  it.each([
    ['report', '%report%'],
    ['a_b', '%a\\_b%'],
    ['100%', '%100\\%%'],
    ['back\\slash', '%back\\\\slash%'],
    ['\\_%', '%\\\\\\_\\%%'],
    ['<&"\'>', '%<&"\'>%'],
  ])('%s becomes %s', (term, literal) => {
    expect(likeLiteral(term)).toBe(literal);
  });

  it('wildcards in the term are matched literally: "a_b" does not find "axb", "%" does not find everything', () => {
    expect(sqliteLike(likeLiteral('a_b'), 'a_b.txt')).toBe(true);
    expect(sqliteLike(likeLiteral('a_b'), 'axb.txt')).toBe(false);
    expect(sqliteLike(likeLiteral('%'), '100%.txt')).toBe(true);
    expect(sqliteLike(likeLiteral('%'), 'plain.txt')).toBe(false);
    expect(sqliteLike(likeLiteral('a\\_b'), 'a_b.txt')).toBe(false);
    // Unescaped, the same terms would have widened the match.
    expect(sqliteLike('%a_b%', 'axb.txt')).toBe(true);
    expect(sqliteLike('%%%', 'plain.txt')).toBe(true);
  });

  it('property: the server finds a name exactly when the broker says it matches', () => {
    const char = fc.constantFrom('a', 'B', 'é', 'É', '%', '_', '\\', '.', ' ', '€', '😀', 'x');
    const text = (min: number) =>
      fc.array(char, { minLength: min, maxLength: 8 }).map((a) => a.join(''));
    fc.assert(
      fc.property(text(1), text(0), (term, name) => {
        const nfcName = name.normalize('NFC');
        expect(sqliteLike(likeLiteral(term), nfcName)).toBe(nameMatches(nfcName, term));
      }),
      { numRuns: 2000 },
    );
  });
});

describe('the XML body', () => {
  it('carries the scope raw (not percent-encoded), the literal, the limit and the offset', () => {
    const body = searchBody({ ...QUERY, scope: '/files/alice/Docs/Report folder', offset: 200 });
    expect(read(body)).toEqual({
      scope: '/files/alice/Docs/Report folder',
      literal: '%report%',
      limit: '101',
      offset: '200',
    });
    expect(body).toContain('<d:href>/files/alice/Docs/Report folder</d:href>');
    expect(body).toContain('<oc:fileid/></d:prop><d:literal>73</d:literal>');
    expect(body).toContain('xmlns:sd="https://github.com/icewind1991/SearchDAV/ns"');
  });

  it.each([
    ['<', 'a<b'],
    ['&', 'a&b'],
    ['double quote', 'a"b'],
    ['single quote', "a'b"],
    ['>', 'a>b'],
    ['a closing tag', '</d:literal></d:like><d:is-collection/><d:like>'],
    ['an entity', '&amp;lt;'],
    ['CDATA', '<![CDATA[x]]>'],
  ])('escapes %s in the term and the scope: the server reads them back unchanged', (_what, raw) => {
    const body = searchBody({ ...QUERY, scope: `/files/alice/${raw}`, term: raw });
    const parsed = read(body);
    expect(parsed.scope).toBe(`/files/alice/${raw}`);
    expect(parsed.literal).toBe(likeLiteral(raw));
    // Nothing of the raw text survives as markup.
    expect(body).not.toContain(raw);
  });

  it('escapes \\, % and _ for LIKE, then & < > " \' for XML', () => {
    const parsed = read(searchBody({ ...QUERY, term: '50%_a\\b&<"' }));
    expect(parsed.literal).toBe('%50\\%\\_a\\\\b&<"%');
  });

  it('property: any term and scope text gives well-formed XML that reads back exactly', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: 'grapheme', minLength: 1, maxLength: 20 }),
        fc.string({ unit: 'grapheme', minLength: 1, maxLength: 20 }),
        (term, name) => {
          // Characters XML cannot carry are refused (tested below), never sent.
          // eslint-disable-next-line no-control-regex
          fc.pre(!/[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]/.test(term + name));
          // XML parsers normalise line ends, as the server's does.
          fc.pre(!(term + name).includes('\r'));
          const parsed = read(searchBody({ ...QUERY, scope: `/files/alice/${name}`, term }));
          expect(parsed.literal).toBe(likeLiteral(term));
          expect(parsed.scope).toBe(`/files/alice/${name}`);
        },
      ),
      { numRuns: 500 },
    );
  });

  it('refuses what XML cannot carry instead of dropping it', () => {
    for (const bad of ['a\u0000b', 'a\u0001b', 'a\ufffeb', 'a\ud800b']) {
      invalid(() => escapeXmlText(bad));
      invalid(() => searchBody({ ...QUERY, term: bad }));
    }
  });

  it('refuses a limit, offset, folder id or scope it must not send', () => {
    for (const limit of [0, -1, 1.5, 1001, Number.NaN])
      invalid(() => searchBody({ ...QUERY, limit }));
    for (const offset of [-1, 0.5, Number.POSITIVE_INFINITY])
      invalid(() => searchBody({ ...QUERY, offset }));
    for (const folderId of ['', '7a', '1 OR 1', '<x/>'])
      invalid(() => searchBody({ ...QUERY, folderId }));
    for (const scope of ['/remote.php/dav/files/alice', 'files/alice', ''])
      invalid(() => searchBody({ ...QUERY, scope }));
    invalid(() => searchBody({ ...QUERY, term: '' }));
  });
});
