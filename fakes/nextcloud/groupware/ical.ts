/**
 * The fake's own reading and writing of iCalendar and vCard content lines (the fakes
 * import nothing of the broker): enough to validate a PUT, expand an event and match a
 * card the way Nextcloud's Sabre does for the requests the broker makes.
 */

export interface Prop {
  /** Upper case, without a vCard group prefix. */
  name: string;
  /** The raw parameter text after the name, e.g. `;TZID=Europe/Berlin` ('' if none). */
  params: string;
  value: string;
}

export interface Comp {
  name: string;
  props: Prop[];
  comps: Comp[];
}

export class IcalError extends Error {}

/** Parse a document into its top components; throws IcalError on anything malformed. */
export function parseIcal(text: string): Comp[] {
  const lines = text
    .replace(/\r\n?/g, '\n')
    .replace(/\n[ \t]/g, '')
    .split('\n')
    .filter((l) => l !== '');
  const top: Comp[] = [];
  const stack: Comp[] = [];
  for (const line of lines) {
    const m = /^(?:[A-Za-z0-9-]+\.)?([A-Za-z0-9-]+)((?:;[^:;]+=(?:"[^"]*"|[^:;"]*))*):(.*)$/.exec(
      line,
    );
    if (m === null) throw new IcalError(`malformed line`);
    const [, rawName = '', params = '', value = ''] = m;
    const name = rawName.toUpperCase();
    if (name === 'BEGIN') {
      const comp: Comp = { name: value.toUpperCase(), props: [], comps: [] };
      (stack[stack.length - 1]?.comps ?? top).push(comp);
      stack.push(comp);
    } else if (name === 'END') {
      if (stack.pop()?.name !== value.toUpperCase()) throw new IcalError('unbalanced END');
    } else {
      const open = stack[stack.length - 1];
      if (open === undefined) throw new IcalError('a property outside a component');
      open.props.push({ name, params, value });
    }
  }
  if (stack.length > 0) throw new IcalError('unterminated component');
  return top;
}

export function prop(comp: Comp, name: string): Prop | undefined {
  return comp.props.find((p) => p.name === name);
}

export function param(p: Prop, name: string): string | undefined {
  const m = new RegExp(`;${name}=("([^"]*)"|[^;:]*)`, 'i').exec(p.params);
  return m === null ? undefined : (m[2] ?? m[1]);
}

/** Serialise with CRLF, folded at 75 octets as Sabre does. */
export function writeIcal(comp: Comp): string {
  return (
    fold(`BEGIN:${comp.name}`) +
    comp.props.map((p) => fold(`${p.name}${p.params}:${p.value}`)).join('') +
    comp.comps.map(writeIcal).join('') +
    fold(`END:${comp.name}`)
  );
}

function fold(line: string): string {
  const parts: string[] = [];
  let current = '';
  let bytes = 0;
  for (const ch of line) {
    const size = Buffer.byteLength(ch);
    if (bytes + size > 75) {
      parts.push(current);
      current = ' ';
      bytes = 1;
    }
    current += ch;
    bytes += size;
  }
  parts.push(current);
  return `${parts.join('\r\n')}\r\n`;
}
