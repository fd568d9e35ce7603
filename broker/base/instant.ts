/**
 * Instants the agent gives with their zone: ISO 8601 date-times that end in `Z` or an
 * offset (`+01:00`). A time without a zone is refused, never guessed (the broker does not
 * know the agent's or the owner's zone).
 */

const ZONED =
  /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,3}))?)?(Z|([+-])(\d{2}):(\d{2}))$/;

/** ms since the epoch, or undefined when the text is not a valid zoned date-time. */
export function parseZonedInstant(text: string): number | undefined {
  const m = ZONED.exec(text);
  if (m === null) return undefined;
  const [, y, mo, d, h, mi, s = '0', frac = '0', zone, sign, oh = '0', om = '0'] = m;
  const fields = [y, mo, d, h, mi, s].map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const [year, month, day, hour, minute, second] = fields;
  const local = Date.UTC(year, month - 1, day, hour, minute, second, Number(frac.padEnd(3, '0')));
  const back = new Date(local);
  // Security: no rollover (Feb 30, 24:00, minute 61): what is checked is what was written.
  if (
    back.getUTCFullYear() !== year ||
    back.getUTCMonth() !== month - 1 ||
    back.getUTCDate() !== day ||
    back.getUTCHours() !== hour ||
    back.getUTCMinutes() !== minute ||
    back.getUTCSeconds() !== second ||
    Number(oh) > 23 ||
    Number(om) > 59
  )
    return undefined;
  if (zone === 'Z') return local;
  const offset = (Number(oh) * 60 + Number(om)) * 60_000;
  return sign === '+' ? local - offset : local + offset;
}

export const ZONED_EXAMPLE = '2026-12-14T09:00:00+01:00 or 2026-12-14T08:00:00Z';
