/**
 * How the Activity API merges the rows of one page into entries (Nextcloud's EventMerger
 * and the files, calendar and contacts providers; docs/nextcloud-behaviour.md "The
 * Activity app"): a row merges into the entry before it when both have the same app,
 * subject and object type, lie at most 3 hours apart, and differ only in the merging
 * parameter (`file`, `oldfile` for moves, `event`, `card`; files then also `user`), at
 * most 5 values of it. The merged entry takes the newer row's id and object, the later
 * time, and lists every object, the oldest first.
 */
import type { ActivityRow, RichParam } from './log.js';

const MERGE_WINDOW_SECONDS = 3 * 60 * 60;

/** An entry being built: its newest row, its rich subject, and the entry it absorbed. */
export interface MergedEvent {
  readonly row: ActivityRow;
  readonly template: string;
  readonly params: Readonly<Record<string, RichParam>>;
  readonly timestamp: number;
  readonly child: MergedEvent | undefined;
}

const same = (a: RichParam, b: RichParam | undefined): boolean =>
  b !== undefined && JSON.stringify(a) === JSON.stringify(b);

/** `{file}` → `{file3}, {file2} and {file1}` for 3 values; undefined past 5. */
function extended(parameter: string, count: number): string | undefined {
  if (count < 1 || count > 5) return undefined;
  const names = Array.from({ length: count }, (_, i) => `{${parameter}${count - i}}`);
  return names.length === 1
    ? (names[0] ?? '')
    : `${names.slice(0, -1).join(', ')} and ${names[names.length - 1] ?? ''}`;
}

function mergeBy(
  parameter: string,
  event: MergedEvent,
  previous: MergedEvent,
): MergedEvent | undefined {
  const a = event.row;
  const b = previous.row;
  if (a.app !== b.app || a.subject !== b.subject || a.objectType !== b.objectType) return undefined;
  if (Math.abs(event.timestamp - previous.timestamp) > MERGE_WINDOW_SECONDS) return undefined;
  const merging = new RegExp(`^${parameter}(\\d+)?$`);
  const params: Record<string, RichParam> = {};
  let combined = 0;
  const take = (
    own: Readonly<Record<string, RichParam>>,
    other: Readonly<Record<string, RichParam>>,
  ): boolean => {
    for (const [key, value] of Object.entries(own)) {
      if (merging.test(key)) {
        const known = Object.entries(params).some(([k, v]) => merging.test(k) && same(value, v));
        if (!known) params[`${parameter}${++combined}`] = value;
      } else if (same(value, other[key])) params[key] = value;
      else return false;
    }
    return true;
  };
  if (!take(event.params, previous.params) || !take(previous.params, event.params))
    return undefined;
  const replacement = extended(parameter, combined);
  if (replacement === undefined) return undefined;
  return {
    row: event.row,
    template: event.template.replace(`{${parameter}}`, replacement),
    params,
    timestamp: Math.max(event.timestamp, previous.timestamp),
    child: previous,
  };
}

/** A row as an entry, merged into `previous` where the rules above allow. */
export function parseRow(row: ActivityRow, previous: MergedEvent | undefined): MergedEvent {
  const event: MergedEvent = {
    row,
    template: row.template,
    params: row.params,
    timestamp: row.timestamp,
    child: undefined,
  };
  if (previous === undefined) return event;
  const order = row.app === 'files' ? [...row.mergeBy, 'user'] : row.mergeBy;
  for (const parameter of order) {
    const merged = mergeBy(parameter, event, previous);
    if (merged !== undefined) return merged;
  }
  return event;
}

/** The entries of one page of rows, in the page's order. */
export function mergeRows(rows: readonly ActivityRow[]): MergedEvent[] {
  const entries: MergedEvent[] = [];
  for (const row of rows) {
    const event = parseRow(row, entries[entries.length - 1]);
    if (event.child !== undefined) entries.pop();
    entries.push(event);
  }
  return entries;
}

/** Every object of an entry, id → path, the oldest first. */
export function objectsOf(event: MergedEvent): [number, string][] {
  const own: [number, string][] =
    event.row.objectId !== 0 || event.row.objectName !== ''
      ? [[event.row.objectId, event.row.objectName]]
      : [];
  return [...(event.child === undefined ? [] : objectsOf(event.child)), ...own];
}

/**
 * The plain subject: a merged entry names files by their path without slashes at the
 * ends and users by name; a single one names users `@Name` (as the two formatters do).
 */
export function plainSubject(event: MergedEvent): string {
  let text = event.template;
  for (const [key, param] of Object.entries(event.params)) {
    const shown =
      param.type === 'file'
        ? event.child === undefined
          ? (param.path ?? param.name)
          : (param.path ?? '').replace(/^\/+|\/+$/g, '')
        : param.type === 'user' && event.child === undefined
          ? `@${param.name}`
          : param.name;
    text = text.split(`{${key}}`).join(shown);
  }
  return text;
}
