/**
 * vCards as Nextcloud 29 answers for them: `PUT` of a `.vcf` (create-only with
 * `If-None-Match: *`, a UID used twice refused), and the `addressbook-query` REPORT:
 * `prop-filter`s with one `text-match` each (`contains`, `equals`, `starts-with`,
 * `ends-with`; `i;unicode-casemap` ignores case for all of Unicode but not accents and
 * normalises nothing, `i;octet` is exact), `test` anyof/allof, `nresults` cutting the
 * answer without saying so (cards taken in the order of their names), `address-data` with `c:prop` returning only those properties
 * (plus BEGIN, VERSION, UID, PRODID, END).
 */
import { newEtag, type FakeCollection } from '../groupware/collections.js';
import { IcalError, parseIcal, prop, writeIcal, type Comp } from '../groupware/ical.js';
import { EX, type Reply } from '../reply.js';
import { escapeXml, type XmlElement } from '../xml.js';
import { dataXml, existsForCreate, reportRoot } from './caldav.js';
import { CARD, MULTISTATUS_OPEN } from './groupware-props.js';

export function putCard(
  reply: Reply,
  book: FakeCollection,
  name: string,
  body: string,
  ifNoneMatch: string | undefined,
): void {
  if (book.readOnly) {
    reply.sabre(403, EX.forbidden, 'Permission denied to create this card');
    return;
  }
  if (existsForCreate(reply, book.objects, name, ifNoneMatch)) return;
  let card: Comp | undefined;
  try {
    card = parseIcal(body).find((c) => c.name === 'VCARD');
  } catch (e) {
    if (!(e instanceof IcalError)) throw e;
  }
  if (card === undefined) {
    reply.sabre(415, EX.unsupportedMediaType, 'This resource only supports valid vCard data.');
    return;
  }
  const uid = prop(card, 'UID')?.value;
  for (const [other, object] of book.objects)
    if (other !== name && uid !== undefined && object.uid === uid) {
      reply.sabre(
        400,
        EX.badRequest,
        'VCard object with uid already exists in this addressbook collection.',
      );
      return;
    }
  const etag = newEtag();
  const existed = book.objects.has(name);
  book.objects.set(name, { data: body, etag, uid });
  reply.empty(existed ? 204 : 201, { ETag: etag, 'OC-ETag': etag });
}

interface PropFilter {
  name: string;
  collation: string;
  matchType: string;
  text: string;
}

function cardElements(el: XmlElement, local: string): XmlElement[] {
  return el.children.filter((c) => c.ns === CARD && c.local === local);
}

function unescape(value: string): string {
  return value.replace(/\\([\\;,nN])/g, (_, c: string) => (c === 'n' || c === 'N' ? '\n' : c));
}

function matches(card: Comp, f: PropFilter): boolean {
  const fold = (s: string): string => (f.collation === 'i;octet' ? s : s.toLowerCase());
  const needle = fold(f.text);
  return card.props
    .filter((p) => p.name === f.name)
    .some((p) => {
      const value = fold(unescape(p.value));
      if (f.matchType === 'equals') return value === needle;
      if (f.matchType === 'starts-with') return value.startsWith(needle);
      if (f.matchType === 'ends-with') return value.endsWith(needle);
      return value.includes(needle);
    });
}

const ALWAYS = new Set(['VERSION', 'UID', 'PRODID']);

export function reportCards(reply: Reply, book: FakeCollection, href: string, body: string): void {
  const root = reportRoot(reply, body, CARD, 'addressbook-query');
  if (root === undefined) return;
  const filter = cardElements(root, 'filter')[0];
  const filters: PropFilter[] = (
    filter === undefined ? [] : cardElements(filter, 'prop-filter')
  ).map((pf) => {
    const match = cardElements(pf, 'text-match')[0];
    return {
      name: (pf.attrs.get('name') ?? '').toUpperCase(),
      collation: match?.attrs.get('collation') ?? 'i;unicode-casemap',
      matchType: match?.attrs.get('match-type') ?? 'contains',
      text: match?.text ?? '',
    };
  });
  const allOf = filter?.attrs.get('test') === 'allof';
  const limitEl = cardElements(root, 'limit')[0];
  const nresults =
    limitEl === undefined ? undefined : Number(cardElements(limitEl, 'nresults')[0]?.text);
  const asked = root.children.find((c) => c.local === 'prop');
  const addressData = asked?.children.find((c) => c.ns === CARD && c.local === 'address-data');
  const wanted =
    addressData === undefined
      ? []
      : cardElements(addressData, 'prop').map((p) => (p.attrs.get('name') ?? '').toUpperCase());
  const parts: string[] = [];
  // Observed: cards are matched in the order of their names, so `nresults` keeps the first.
  const byName = [...book.objects].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  for (const [name, object] of byName) {
    if (nresults !== undefined && parts.length >= nresults) break;
    const card = parseIcal(object.data).find((c) => c.name === 'VCARD');
    if (card === undefined) continue;
    const hits = filters.map((f) => matches(card, f));
    if (filters.length > 0 && !(allOf ? hits.every(Boolean) : hits.some(Boolean))) continue;
    const shown: Comp =
      wanted.length === 0
        ? card
        : {
            ...card,
            props: card.props.filter((p) => ALWAYS.has(p.name) || wanted.includes(p.name)),
          };
    parts.push(
      `<d:response><d:href>${href}${encodeURIComponent(name)}</d:href><d:propstat><d:prop>` +
        `<d:getetag>${escapeXml(object.etag)}</d:getetag>` +
        (addressData === undefined
          ? ''
          : `<card:address-data>${dataXml(writeIcal(shown))}</card:address-data>`) +
        '</d:prop><d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response>',
    );
  }
  reply.xml(207, `${MULTISTATUS_OPEN}${parts.join('')}</d:multistatus>`);
}
