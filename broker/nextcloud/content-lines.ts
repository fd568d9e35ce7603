/**
 * The content lines iCalendar (RFC 5545 §3.1) and vCard (RFC 6350 §3.3) share: reading
 * a document into components of properties, and writing text values so that nothing an
 * agent sends can become a property of its own.
 *
 * Security: a value written by `textValue` has its backslashes, commas, semicolons and
 * line breaks escaped, and `contentLine` folds lines at 75 octets without splitting a
 * UTF-8 sequence: a title holding `\r\nATTENDEE:mailto:…` stays the title's text.
 * Reading is lenient with what servers send (LF or CRLF, folded lines) and strict in
 * shape: a component that does not close, or a line without a `:`, rejects the document.
 */
import { CodedError } from '../base/coded-error.js';

export interface ContentLine {
  /** Upper case, e.g. `DTSTART`. */
  name: string;
  /** Parameter names in upper case; values unquoted (e.g. `TZID` → `Europe/Berlin`). */
  params: ReadonlyMap<string, string>;
  /** The raw value (text values still escaped: see `unescapeText`). */
  value: string;
}

export interface Component {
  /** Upper case, e.g. `VEVENT`. */
  name: string;
  lines: ContentLine[];
  children: Component[];
}

/** The text is not iCalendar/vCard content lines as RFC 5545 §3.1 writes them. */
export type ContentLineErrorCode = 'malformed';

export class ContentLineError extends CodedError<ContentLineErrorCode> {
  override readonly name = 'ContentLineError';
  constructor(message: string) {
    super('malformed', message);
  }
}

const NAME = /^[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)?$/;

/** One unfolded line: `NAME;P=V;Q="a:b":value`. */
function parseLine(line: string): ContentLine {
  const nameEnd = line.search(/[;:]/);
  if (nameEnd <= 0) throw new ContentLineError('a line without a property name');
  // A vCard group prefix (`item1.EMAIL`) is dropped: the property is what counts.
  const rawName = line.slice(0, nameEnd);
  if (!NAME.test(rawName)) throw new ContentLineError('a malformed property name');
  const name = (
    rawName.includes('.') ? rawName.slice(rawName.indexOf('.') + 1) : rawName
  ).toUpperCase();
  let i = nameEnd;
  const params = new Map<string, string>();
  while (line[i] === ';') {
    const eq = line.indexOf('=', i);
    if (eq === -1) throw new ContentLineError('a parameter without a value');
    const key = line.slice(i + 1, eq).toUpperCase();
    i = eq + 1;
    let value = '';
    // Several values (`TYPE=work,voice`, or quoted ones) are kept as written, unquoted.
    for (;;) {
      if (line[i] === '"') {
        const close = line.indexOf('"', i + 1);
        if (close === -1) throw new ContentLineError('an unterminated quoted parameter');
        value += line.slice(i + 1, close);
        i = close + 1;
      } else {
        const end = line.slice(i).search(/[;:,]/);
        if (end === -1) throw new ContentLineError('a line without a value');
        value += line.slice(i, i + end);
        i += end;
      }
      if (line[i] !== ',') break;
      value += ',';
      i += 1;
    }
    params.set(key, value);
  }
  if (line[i] !== ':') throw new ContentLineError('a line without a value');
  return { name, params, value: line.slice(i + 1) };
}

/** Unfold (a line break followed by a space or tab continues the line) and split. */
function unfold(text: string): string[] {
  return text
    .replace(/\r\n?/g, '\n')
    .replace(/\n[ \t]/g, '')
    .split('\n')
    .filter((l) => l !== '');
}

/** Parse a document (one `BEGIN:VCALENDAR` or several `BEGIN:VCARD`) into its top components. */
export function parseComponents(text: string): Component[] {
  const top: Component[] = [];
  const stack: Component[] = [];
  for (const raw of unfold(text)) {
    const line = parseLine(raw);
    if (line.name === 'BEGIN') {
      const component: Component = { name: line.value.toUpperCase(), lines: [], children: [] };
      const parent = stack[stack.length - 1];
      if (parent === undefined) top.push(component);
      else parent.children.push(component);
      stack.push(component);
    } else if (line.name === 'END') {
      const open = stack.pop();
      if (open === undefined || open.name !== line.value.toUpperCase())
        throw new ContentLineError('a component that ends without beginning');
    } else {
      const open = stack[stack.length - 1];
      if (open === undefined) throw new ContentLineError('a property outside any component');
      open.lines.push(line);
    }
  }
  if (stack.length > 0) throw new ContentLineError('a component that does not end');
  return top;
}

/** The first property of that name, if any. */
export function first(component: Component, name: string): ContentLine | undefined {
  return component.lines.find((l) => l.name === name);
}

/** Every property of that name, in order. */
export function all(component: Component, name: string): ContentLine[] {
  return component.lines.filter((l) => l.name === name);
}

/** A TEXT value as written (`\n`, `\,`, `\;`, `\\` undone). */
export function unescapeText(value: string): string {
  return value.replace(/\\([\\;,nN])/g, (_, c: string) => (c === 'n' || c === 'N' ? '\n' : c));
}

/**
 * A TEXT value ready to write. Security: escaping every line break (CR, LF and CRLF
 * alike) keeps the value on its own line; see the module comment.
 */
export function textValue(text: string): string {
  return text
    .replace(/\\/g, '\\\\')
    .replace(/;/g, '\\;')
    .replace(/,/g, '\\,')
    .replace(/\r\n|\r|\n/g, '\\n');
}

/** One line, folded at 75 octets (RFC 5545 §3.1), with its CRLF. */
export function contentLine(nameAndParams: string, value: string): string {
  const line = `${nameAndParams}:${value}`;
  const out: string[] = [];
  let current = '';
  let bytes = 0;
  for (const ch of line) {
    const size = Buffer.byteLength(ch, 'utf8');
    if (bytes + size > 75) {
      out.push(current);
      // The continuation's leading space counts toward its 75 octets.
      current = ' ';
      bytes = 1;
    }
    current += ch;
    bytes += size;
  }
  out.push(current);
  return `${out.join('\r\n')}\r\n`;
}
