import fc from 'fast-check';
import { XMLParser } from 'fast-xml-parser';
import { describe, expect, it } from 'vitest';
import { NOT_XML_CHAR } from '../../broker/base/text.js';
import { MAX_XML_DEPTH, readXml, XmlError } from '../../broker/nextcloud/xml.js';

const LISTS = new Set(['response', 'propstat']);

function refused(xml: string): string {
  try {
    readXml(xml, LISTS);
  } catch (error) {
    expect(error).toBeInstanceOf(XmlError);
    return (error as Error).message;
  }
  throw new Error(`accepted: ${xml.slice(0, 80)}`);
}

describe('readXml reads what Nextcloud sends', () => {
  it('drops prefixes, keeps lists for response and propstat, decodes entities, trims', () => {
    const xml =
      '<?xml version="1.0"?>\n<d:multistatus xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns">' +
      '<d:response><d:href>/a%20b&amp;c</d:href><d:propstat><d:prop>' +
      '<d:resourcetype><d:collection/></d:resourcetype><d:getetag>&quot;x&quot;</d:getetag>' +
      '<oc:size> 12 </oc:size></d:prop><d:status>HTTP/1.1 200 OK</d:status></d:propstat>' +
      '</d:response></d:multistatus>';
    const { root, value } = readXml(xml, LISTS);
    expect(root).toBe('multistatus');
    expect(JSON.parse(JSON.stringify(value))).toEqual({
      response: [
        {
          href: '/a%20b&c',
          propstat: [
            {
              prop: { resourcetype: { collection: '' }, getetag: '"x"', size: '12' },
              status: 'HTTP/1.1 200 OK',
            },
          ],
        },
      ],
    });
  });

  it('decodes character references and keeps CDATA literal', () => {
    const { value } = readXml('<a><b>&#65;&#x1F600;</b><c><![CDATA[<d>&amp;]]></c></a>');
    expect(value).toMatchObject({ b: 'A\u{1F600}', c: '<d>&amp;' });
  });

  it('a repeated name becomes a list (an href given twice is not one string)', () => {
    const { value } = readXml('<r><href>/a</href><href>/b</href></r>');
    expect((value as Record<string, unknown>)['href']).toEqual(['/a', '/b']);
  });

  it('names such as __proto__ are plain keys of a record without a prototype', () => {
    const { value } = readXml('<r><__proto__>x</__proto__><constructor/></r>');
    expect(Object.getPrototypeOf(value)).toBeNull();
    expect((value as Record<string, unknown>)['__proto__']).toBe('x');
    expect(({} as Record<string, unknown>)['x']).toBeUndefined();
  });

  it(`accepts nesting up to ${MAX_XML_DEPTH} deep`, () => {
    const xml = '<a>'.repeat(MAX_XML_DEPTH) + '</a>'.repeat(MAX_XML_DEPTH);
    expect(readXml(xml).root).toBe('a');
  });
});

describe('hostile XML (a compromised server or a proxy in the way)', () => {
  it.each([
    ['a DOCTYPE with an entity (billion laughs)', '<!DOCTYPE x [<!ENTITY a "aaaa">]><x>&a;</x>'],
    ['an entity declaration alone', '<x><!ENTITY a "b"></x>'],
    ['an undefined named entity', '<x>&nbsp;</x>'],
    ['a bare ampersand', '<x>a & b</x>'],
    ['an ampersand in an attribute', '<x a="&"/>'],
    ['a reference to NUL', '<x>&#0;</x>'],
    ['a reference to a surrogate', '<x>&#xD800;</x>'],
    ['a raw control character', '<x>a\u0001b</x>'],
    ['a control character between elements', '<x><y/>\u000b<z/></x>'],
    [']]> in text', '<x>a]]>b</x>'],
    ['a second root', '<x/><y/>'],
    ['text outside the root', '<x/>tail'],
    ['text before the root', 'head<x/>'],
    ['an unclosed element', '<x><y></y>'],
    ['a mismatched end tag', '<x><y></x></y>'],
    ['an end tag without a start', '</x>'],
    ['a stray <', '<x>a < b</x>'],
    ['a duplicate attribute', '<x a="1" a="2"/>'],
    ['an attribute without a value', '<x a/>'],
    ['an unquoted attribute', '<x a=1/>'],
    ['a comment with --', '<x><!-- a -- b --></x>'],
    ['an unclosed comment', '<x><!-- a </x>'],
    ['CDATA outside the root', '<![CDATA[x]]><x/>'],
    ['an xml declaration not at the start', '<x><?xml version="1.0"?></x>'],
    ['no root', '<?xml version="1.0"?>'],
    ['not XML', 'hello'],
    ['too deep', '<a>'.repeat(MAX_XML_DEPTH + 1) + '</a>'.repeat(MAX_XML_DEPTH + 1)],
    ['very deep (no stack exhaustion)', '<a>'.repeat(200_000)],
  ])('refuses %s', (_name, xml) => {
    expect(refused(xml)).not.toBe('');
  });

  it('says DOCTYPE for a DOCTYPE', () => {
    expect(refused('<?xml version="1.0"?><!DOCTYPE x><x/>')).toBe('a DOCTYPE');
  });
});

// The reader that was used before this one, with the options multistatus.ts passed it.
const reference = new XMLParser({
  removeNSPrefix: true,
  ignoreAttributes: true,
  parseTagValue: false,
  trimValues: true,
  processEntities: true,
  htmlEntities: false,
  isArray: (name) => LISTS.has(name),
});

interface Node {
  name: string;
  children: Node[] | string;
}
const names = fc.constantFrom('d:response', 'd:propstat', 'd:prop', 'href', 'oc:x', 'nc:lock');
const text = fc.string({ unit: 'grapheme', maxLength: 12 }).filter((t) => !NOT_XML_CHAR.test(t));
const tree: fc.Arbitrary<Node> = fc.letrec<{ node: Node }>((tie) => ({
  node: fc.record({
    name: names,
    children: fc.oneof(
      { depthSize: 'small' },
      text,
      fc.array(tie('node'), { minLength: 1, maxLength: 4 }),
    ),
  }),
})).node;

function escape(t: string): string {
  return t.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}
function render(n: Node, pad: string, attrs = ''): string {
  if (typeof n.children === 'string')
    return n.children === ''
      ? `<${n.name}${attrs}/>`
      : `<${n.name}${attrs}>${escape(n.children)}</${n.name}>`;
  return `<${n.name} a="1">${n.children.map((c) => pad + render(c, pad, attrs)).join('')}${pad}</${n.name}>`;
}

// The reader CalDAV and CardDAV replies went through before, with multistatus.ts's options.
const groupwareReference = new XMLParser({
  removeNSPrefix: true,
  ignoreAttributes: false,
  attributeNamePrefix: '@',
  parseTagValue: false,
  parseAttributeValue: false,
  trimValues: true,
  processEntities: true,
  htmlEntities: true,
  isArray: (name) => LISTS.has(name) || name === 'comp',
});

describe('agrees with the parser it replaced', () => {
  it('property: the same tree for well-formed documents', () => {
    fc.assert(
      fc.property(tree, fc.constantFrom('', '\n', '  '), (node, pad) => {
        const xml = `<?xml version="1.0"?>\n<root xmlns:d="DAV:">${render(node, pad)}</root>`;
        const ours = JSON.parse(JSON.stringify(readXml(xml, LISTS))) as {
          root: string;
          value: unknown;
        };
        expect(ours).toEqual({
          root: 'root',
          value: (reference.parse(xml) as { root: unknown }).root,
        });
      }),
      { numRuns: 500 },
    );
  });
});

describe('with attributes, agrees with the parser CalDAV and CardDAV replies used', () => {
  const GROUPWARE_LISTS = new Set([...LISTS, 'comp']);
  const attrs = fc.constantFrom(
    '',
    ' name="VEVENT"',
    ' c:name="VTODO" x="a&amp;b"',
    ' xmlns:x1="urn:x" v=\'1\'',
    ' xmlns="DAV:"',
  );

  it('property: the same tree for well-formed documents', () => {
    fc.assert(
      fc.property(tree, fc.constantFrom('', '\n'), attrs, (node, pad, a) => {
        const xml = `<?xml version="1.0"?>\n<root xmlns:d="DAV:">${render(node, pad, a)}<comp${a}/></root>`;
        const ours = JSON.parse(
          JSON.stringify(readXml(xml, GROUPWARE_LISTS, { attributes: true })),
        ) as { root: string; value: unknown };
        expect(ours).toEqual({
          root: 'root',
          value: (groupwareReference.parse(xml) as { root: unknown }).root,
        });
      }),
      { numRuns: 500 },
    );
  });

  it('keeps a component name and an element with text and attributes', () => {
    const xml =
      '<c:set xmlns:c="urn:ietf:params:xml:ns:caldav"><c:comp name="VEVENT"/>' +
      '<c:data content-type="text/calendar"> BEGIN&#13;</c:data><c:plain>x</c:plain></c:set>';
    expect(
      JSON.parse(JSON.stringify(readXml(xml, new Set(['comp']), { attributes: true }))),
    ).toEqual({
      root: 'set',
      value: {
        comp: [{ '@name': 'VEVENT' }],
        data: { '#text': 'BEGIN\r', '@content-type': 'text/calendar' },
        plain: 'x',
      },
    });
  });
});
