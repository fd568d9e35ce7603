/**
 * A strict XML reader for the replies the broker reads from Nextcloud (multistatus): one
 * pass that checks well-formedness and builds the small tree the caller walks.
 *
 * The tree has the shape the caller has always read: an element with child elements is a
 * null-prototype record of its children by local name (the namespace prefix dropped; a
 * repeated name, or one of `arrays`, holds a list), an element without child elements is
 * its text (entities decoded, trimmed). Attributes are checked and dropped, or with
 * `attributes` kept as `@`-prefixed keys by local name (namespace declarations dropped),
 * beside `#text` when the element has text: CalDAV names a component in one
 * (`<cal:comp name="VEVENT"/>`).
 *
 * Security: the text is from the network. Anything that is not well-formed XML is
 * refused (unmatched or unclosed tags, a second root, text outside the root, a stray `<`
 * or `&`, a duplicate attribute, a control character); a DOCTYPE is refused, so no entity
 * is ever defined or expanded: only the five predefined entities and character
 * references are decoded. Nesting is bounded (the replies read here are 6 to 10 deep), so
 * a hostile reply cannot exhaust the stack or build a tree deeper than any caller walks.
 * The reply's size is bounded before this runs (the connection's byte limits).
 */
import { NOT_XML_CHAR } from '../base/text.js';
import { CodedError } from '../base/coded-error.js';

export type XmlValue = string | XmlRecord | XmlValue[];
export interface XmlRecord {
  [name: string]: XmlValue;
}

/** Thrown with what is wrong; the caller turns it into its own error. */
export class XmlError extends CodedError<'malformed'> {
  override readonly name = 'XmlError';
  constructor(message: string) {
    super('malformed', message);
  }
}

/** Deeper nesting is refused. */
export const MAX_XML_DEPTH = 32;

const S = '[ \\t\\r\\n]';
const NAME = '[A-Za-z_:\\u00C0-\\uFFFF][-A-Za-z0-9_.:\\u00B7\\u00C0-\\uFFFF]*';
const START_TAG = new RegExp(
  `<(${NAME})((?:${S}+${NAME}${S}*=${S}*(?:"[^"<]*"|'[^'<]*'))*)${S}*(/?)>`,
  'y',
);
const END_TAG = new RegExp(`</(${NAME})${S}*>`, 'y');
const ATTRIBUTE = new RegExp(`(${NAME})${S}*=${S}*(?:"([^"<]*)"|'([^'<]*)')`, 'g');
const PI_TARGET = new RegExp(`^${NAME}(?:${S}|$)`);
const DECLARATION = new RegExp(`^<\\?xml${S}[^?]*\\?>`);
const WHITESPACE = new RegExp(`^${S}*$`);
const REFERENCE = /&(?:(lt|gt|amp|quot|apos)|#([0-9]{1,7})|#x([0-9A-Fa-f]{1,6}));/g;
const PREDEFINED: Record<string, string> = { lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" };

function fail(what: string): never {
  throw new XmlError(what);
}

function localName(name: string): string {
  // As the reader of these replies always did: `d:href` is `href`; other names are kept.
  const colon = name.indexOf(':');
  return colon > 0 && colon === name.lastIndexOf(':') ? name.slice(colon + 1) : name;
}

function codePointFrom(dec: string | undefined, hex: string | undefined): string {
  const cp = dec !== undefined ? Number(dec) : Number.parseInt(hex ?? '', 16);
  const allowed =
    cp === 0x9 ||
    cp === 0xa ||
    cp === 0xd ||
    (cp >= 0x20 && cp <= 0xd7ff) ||
    (cp >= 0xe000 && cp <= 0xfffd) ||
    (cp >= 0x10000 && cp <= 0x10ffff);
  if (!allowed) fail('a character reference to a character XML does not allow');
  return String.fromCodePoint(cp);
}

/** Decodes references in text or an attribute value; any other `&` is refused. */
function decode(raw: string): string {
  if (NOT_XML_CHAR.test(raw)) fail('a control character');
  if (!raw.includes('&')) return raw;
  let checked = 0;
  const out = raw.replace(
    REFERENCE,
    (
      whole: string,
      named: string | undefined,
      dec: string | undefined,
      hex: string | undefined,
      offset: number,
    ) => {
      if (raw.slice(checked, offset).includes('&')) fail('an & that starts no reference');
      checked = offset + whole.length;
      return named !== undefined ? (PREDEFINED[named] as string) : codePointFrom(dec, hex);
    },
  );
  if (raw.slice(checked).includes('&')) fail('an & that starts no reference');
  return out;
}

/** Checks every attribute; with `keep`, answers them by `@`local name (else undefined). */
function readAttributes(text: string, keep: boolean): XmlRecord | undefined {
  if (text === '') return undefined;
  const seen = new Set<string>();
  let kept: XmlRecord | undefined;
  for (const m of text.matchAll(ATTRIBUTE)) {
    const name = m[1] as string;
    if (seen.has(name)) fail('a duplicate attribute');
    seen.add(name);
    const value = decode(m[2] ?? m[3] ?? '');
    if (!keep || name === 'xmlns' || name.startsWith('xmlns:')) continue;
    (kept ??= Object.create(null) as XmlRecord)[`@${localName(name)}`] = value;
  }
  return kept;
}

interface Open {
  readonly name: string;
  readonly local: string;
  readonly attributes: XmlRecord | undefined;
  children: XmlRecord | undefined;
  text: string;
}

function attach(parent: Open, local: string, value: XmlValue, arrays: ReadonlySet<string>): void {
  const record = (parent.children ??= Object.create(null) as XmlRecord);
  const previous = record[local];
  if (previous === undefined) record[local] = arrays.has(local) ? [value] : value;
  else if (Array.isArray(previous)) previous.push(value);
  else record[local] = [previous, value];
}

function valueOf(open: Open): XmlValue {
  const text = open.text.trim();
  if (open.children === undefined && open.attributes === undefined) return decode(text);
  const record = open.children ?? (Object.create(null) as XmlRecord);
  if (text !== '') record['#text'] = decode(text);
  return open.attributes === undefined ? record : Object.assign(record, open.attributes);
}

/**
 * Reads one XML document; returns its root's local name and value. `arrays`: local names
 * that always hold a list; `attributes`: keep attributes (see the top of this file).
 * Throws XmlError when the text is not well-formed XML.
 */
export function readXml(
  xml: string,
  arrays: ReadonlySet<string> = new Set(),
  options: { readonly attributes?: boolean } = {},
): { root: string; value: XmlValue } {
  const keepAttributes = options.attributes === true;
  if (/<!DOCTYPE|<!ENTITY/i.test(xml)) fail('a DOCTYPE');
  const stack: Open[] = [];
  let root: { root: string; value: XmlValue } | undefined;
  let at = 0;
  const declaration = DECLARATION.exec(xml);
  if (declaration !== null) at = declaration[0].length;
  while (at < xml.length) {
    const lt = xml.indexOf('<', at);
    const textEnd = lt === -1 ? xml.length : lt;
    if (textEnd > at) {
      const text = xml.slice(at, textEnd);
      const open = stack[stack.length - 1];
      if (open === undefined) {
        if (!WHITESPACE.test(text)) fail('text outside the root element');
      } else {
        if (text.includes(']]>')) fail(']]> in text');
        if (NOT_XML_CHAR.test(text)) fail('a control character');
        open.text += text;
      }
      at = textEnd;
      if (lt === -1) break;
    }
    const next = xml.charCodeAt(at + 1);
    if (next === 0x2f /* / */) {
      END_TAG.lastIndex = at;
      const m = END_TAG.exec(xml);
      const open = stack.pop();
      if (m === null || open === undefined || m[1] !== open.name) fail('an unmatched end tag');
      at = END_TAG.lastIndex;
      const value = valueOf(open);
      const parent = stack[stack.length - 1];
      if (parent === undefined) root = { root: open.local, value };
      else attach(parent, open.local, value, arrays);
    } else if (next === 0x21 /* ! */) {
      if (xml.startsWith('<!--', at)) {
        const end = xml.indexOf('-->', at + 4);
        if (end === -1 || xml.slice(at + 4, end).includes('--')) fail('a malformed comment');
        at = end + 3;
      } else if (xml.startsWith('<![CDATA[', at)) {
        const open = stack[stack.length - 1];
        const end = xml.indexOf(']]>', at + 9);
        if (open === undefined || end === -1) fail('a misplaced or unclosed CDATA section');
        const data = xml.slice(at + 9, end);
        if (NOT_XML_CHAR.test(data)) fail('a control character');
        // CDATA is literal text: escape it so that decoding the element's text keeps it.
        open.text += data.replace(/&/g, '&amp;');
        at = end + 3;
      } else fail('a markup declaration');
    } else if (next === 0x3f /* ? */) {
      const end = xml.indexOf('?>', at + 2);
      const body = end === -1 ? '' : xml.slice(at + 2, end);
      if (end === -1 || !PI_TARGET.test(body) || /^xml(?:[ \t\r\n]|$)/i.test(body))
        fail('a malformed processing instruction');
      at = end + 2;
    } else {
      START_TAG.lastIndex = at;
      const m = START_TAG.exec(xml);
      if (m === null) fail('a malformed tag or a stray <');
      if (stack.length === 0 && root !== undefined) fail('a second root element');
      if (stack.length >= MAX_XML_DEPTH) fail('elements nested too deeply');
      const attributes = readAttributes(m[2] as string, keepAttributes);
      at = START_TAG.lastIndex;
      const name = m[1] as string;
      const open: Open = {
        name,
        local: localName(name),
        attributes,
        children: undefined,
        text: '',
      };
      if (m[3] === '/') {
        const value = valueOf(open);
        const parent = stack[stack.length - 1];
        if (parent === undefined) root = { root: open.local, value };
        else attach(parent, open.local, value, arrays);
      } else stack.push(open);
    }
  }
  if (stack.length > 0) fail('an unclosed element');
  if (root === undefined) fail('no root element');
  return root;
}
