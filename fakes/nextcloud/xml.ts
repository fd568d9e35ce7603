/**
 * A small namespace-aware XML reader for request bodies (PROPFIND, LOCK) and the
 * writing helpers for Sabre-style answers. No DTDs: a DOCTYPE is refused, as
 * Sabre refuses entity tricks.
 */

export const NS = {
  dav: 'DAV:',
  sabre: 'http://sabredav.org/ns',
  oc: 'http://owncloud.org/ns',
  nc: 'http://nextcloud.org/ns',
} as const;

/** `xmlns` declarations Nextcloud puts on multistatus and prop roots. */
export const ROOT_NS_ATTRS =
  'xmlns:d="DAV:" xmlns:s="http://sabredav.org/ns" xmlns:oc="http://owncloud.org/ns" xmlns:nc="http://nextcloud.org/ns"';

export interface XmlElement {
  ns: string;
  local: string;
  children: XmlElement[];
  text: string;
  /** Attributes other than `xmlns` declarations, by their name as written. */
  attrs: ReadonlyMap<string, string>;
}

export class XmlParseError extends Error {}

const ENTITIES = new Map([
  ['lt', '<'],
  ['gt', '>'],
  ['amp', '&'],
  ['quot', '"'],
  ['apos', "'"],
]);

function decodeEntities(s: string): string {
  return s.replace(/&(#x[0-9a-fA-F]+|#[0-9]+|[a-z]+);/g, (m, body: string) => {
    if (body.startsWith('#x')) return String.fromCodePoint(parseInt(body.slice(2), 16));
    if (body.startsWith('#')) return String.fromCodePoint(parseInt(body.slice(1), 10));
    const v = ENTITIES.get(body);
    if (v === undefined) throw new XmlParseError(`unknown entity ${m}`);
    return v;
  });
}

interface OpenElement {
  el: XmlElement;
  qname: string;
  scope: Map<string, string>;
}

/** Parse a document into its root element; throws XmlParseError. */
export function parseXml(text: string): XmlElement {
  let i = 0;
  const stack: OpenElement[] = [];
  let root: XmlElement | undefined;
  const tagRe =
    /^<([A-Za-z_][\w.:-]*)((?:\s+[A-Za-z_][\w.:-]*\s*=\s*(?:"[^"]*"|'[^']*'))*)\s*(\/?)>/;
  const attrRe = /([A-Za-z_][\w.:-]*)\s*=\s*(?:"([^"]*)"|'([^']*)')/g;
  while (i < text.length) {
    const lt = text.indexOf('<', i);
    const chunk = lt === -1 ? text.slice(i) : text.slice(i, lt);
    const top = stack[stack.length - 1];
    if (chunk.trim() !== '') {
      if (!top) throw new XmlParseError('text outside the root element');
      top.el.text += decodeEntities(chunk);
    }
    if (lt === -1) break;
    i = lt;
    if (text.startsWith('<?', i)) {
      const end = text.indexOf('?>', i);
      if (end === -1) throw new XmlParseError('unterminated processing instruction');
      i = end + 2;
    } else if (text.startsWith('<!--', i)) {
      const end = text.indexOf('-->', i);
      if (end === -1) throw new XmlParseError('unterminated comment');
      i = end + 3;
    } else if (text.startsWith('<![CDATA[', i)) {
      const end = text.indexOf(']]>', i);
      if (end === -1 || !top) throw new XmlParseError('bad CDATA');
      top.el.text += text.slice(i + 9, end);
      i = end + 3;
    } else if (text.startsWith('<!', i)) {
      throw new XmlParseError('DOCTYPE and declarations are not allowed');
    } else if (text.startsWith('</', i)) {
      const end = text.indexOf('>', i);
      const qname = text.slice(i + 2, end).trim();
      if (end === -1 || !top || top.qname !== qname) throw new XmlParseError('mismatched end tag');
      stack.pop();
      i = end + 1;
    } else {
      const m = tagRe.exec(text.slice(i));
      if (!m) throw new XmlParseError('malformed start tag');
      const qname = m[1] ?? '';
      const scope = new Map(top ? top.scope : []);
      const attrs = m[2] ?? '';
      const plain = new Map<string, string>();
      for (const a of attrs.matchAll(attrRe)) {
        const name = a[1] ?? '';
        const value = decodeEntities(a[2] ?? a[3] ?? '');
        if (name === 'xmlns') scope.set('', value);
        else if (name.startsWith('xmlns:')) scope.set(name.slice(6), value);
        else plain.set(name, value);
      }
      const colon = qname.indexOf(':');
      const prefix = colon === -1 ? '' : qname.slice(0, colon);
      const local = colon === -1 ? qname : qname.slice(colon + 1);
      const ns = scope.get(prefix);
      if (ns === undefined && prefix !== '') throw new XmlParseError(`undeclared prefix ${prefix}`);
      const el: XmlElement = { ns: ns ?? '', local, children: [], text: '', attrs: plain };
      if (top) top.el.children.push(el);
      else if (root) throw new XmlParseError('more than one root element');
      else root = el;
      if (m[3] !== '/') stack.push({ el, qname, scope });
      i += m[0].length;
    }
  }
  if (!root || stack.length > 0) throw new XmlParseError('incomplete document');
  return root;
}

export function child(el: XmlElement, ns: string, local: string): XmlElement | undefined {
  return el.children.find((c) => c.ns === ns && c.local === local);
}

export function escapeXml(s: string): string {
  return s
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;');
}

const PREFIXES = new Map<string, string>([
  [NS.dav, 'd'],
  [NS.sabre, 's'],
  [NS.oc, 'oc'],
  [NS.nc, 'nc'],
]);

/** An element for a property, e.g. `<oc:fileid>12</oc:fileid>`; inner is raw XML. */
export function propElement(ns: string, local: string, inner: string | null): string {
  if (ns === '') {
    return inner === null || inner === ''
      ? `<${local} xmlns=""/>`
      : `<${local} xmlns="">${inner}</${local}>`;
  }
  const prefix = PREFIXES.get(ns);
  const qname = prefix ? `${prefix}:${local}` : `x1:${local}`;
  const decl = prefix ? '' : ` xmlns:x1="${escapeXml(ns)}"`;
  return inner === null || inner === ''
    ? `<${qname}${decl}/>`
    : `<${qname}${decl}>${inner}</${qname}>`;
}
