/**
 * Undo's answer, as the owner reads it in the room, on the console and in the shell: one
 * line per operation (its seq, its tool, where, what undo did or why it left it), then
 * what to do about what was left. Paths come from the audit log (the agent's), so they
 * are spans like every agent path (format.ts).
 */
import type { UndoResult } from '../audit/changes.js';
import type { UndoAnswer, UndoItem } from '../operations/undo/service.js';
import type { Line, Span } from './format.js';
import { reply, say, type Reply } from './reply.js';

/** How many operations one answer lists (a Matrix event has a size limit). */
export const LISTED_UNDOS = 40;

const WORD: Record<UndoResult, string> = {
  undone: 'undone',
  already: 'already undone',
  nothing: 'nothing to undo',
  would_undo: 'would undo',
  changed_since: 'LEFT AS IT IS: changed since',
  not_undoable: 'LEFT AS IT IS',
  failed: 'LEFT AS IT IS: failed',
};

/** Where the operation acted, in its own direction (as the audit and --json say it). */
function where(item: UndoItem): Line {
  if (item.from !== undefined && item.to !== undefined)
    return [{ code: item.from }, ' → ', { code: item.to }];
  return item.path === undefined ? [] : [{ code: item.path }];
}

/** Unix seconds as the owner reads them: 2026-12-04T19:52:10Z. */
const instant = (seconds: number): string =>
  new Date(seconds * 1000).toISOString().replace(/\.000Z$/, 'Z');

/**
 * What is there now, where undo left an operation because of it: the facts the audit's
 * `now` holds, in words (`; now: 34 bytes, modified …, file id 12`). Nothing when
 * nothing is there (the reason says so).
 */
function nowSpans(item: UndoItem): Span[] {
  const now = item.now;
  if (now === undefined || !now.exists) return [];
  const folder = now.kind === 'folder';
  const facts = [
    folder ? 'a folder' : typeof now.size === 'number' ? `${now.size} bytes` : 'a file',
    ...(typeof now.mtime === 'number' ? [`modified ${instant(now.mtime)}`] : []),
    ...(typeof now.file_id === 'string' ? [`file id ${now.file_id}`] : []),
    ...(now.entries === undefined
      ? []
      : [folder ? `${now.entries} item(s) in it` : `${now.entries} version(s) kept`]),
  ].join(', ');
  const elsewhere = now.path !== undefined && now.path !== item.path;
  return ['; now', ...(elsewhere ? [' at ', { code: now.path ?? '' }] : []), ': ', facts];
}

function itemLine(item: UndoItem): Line {
  return [
    `#${item.seq} ${item.tool} `,
    ...where(item),
    ': ',
    { strong: WORD[item.result] },
    ' — ',
    { text: item.reason },
    ...nowSpans(item),
  ];
}

/** The first line: what was asked, and how it went as a whole. */
function headOf(answer: UndoAnswer & { ok: true }, left: number): string {
  const { target, items, dryRun } = answer;
  const what = 'seq' in target ? `operation ${target.seq}` : `request ${target.request}`;
  const order = items.length > 1 ? ', newest first' : '';
  if (items.length === 0) return `Undo of ${what}: nothing it changed is on record.`;
  if (items.every((i) => i.result === 'already'))
    return `Undo of ${what}: nothing left to undo; ${items.length} operation(s) were taken back already.`;
  if (items.every((i) => i.result === 'already' || i.result === 'nothing'))
    return `Undo of ${what}: nothing to undo.`;
  if (dryRun)
    return `Undo of ${what}, dry run (nothing was changed): ${items.length} operation(s)${order}.`;
  return `Undo of ${what}: ${items.length - left} of ${items.length} operation(s) done${order}.`;
}

/** The reply to `undo …` (and `broker undo`'s text). */
export function renderUndo(answer: UndoAnswer): Reply {
  if (!answer.ok)
    return {
      ...say(`Undo: ${answer.message}.`, `Next: ${answer.nextStep}.`),
      refused: true,
      undo: answer,
    };
  const { items } = answer;
  const left = items.filter((i) => ['changed_since', 'not_undoable', 'failed'].includes(i.result));
  const lines: Line[] = [
    [headOf(answer, left.length)],
    ...items.slice(0, LISTED_UNDOS).map(itemLine),
  ];
  if (items.length > LISTED_UNDOS)
    lines.push([
      `… and ${items.length - LISTED_UNDOS} more: run "broker undo … --json" on the broker's host for all.`,
    ]);
  for (const warning of answer.warnings) lines.push([`Warning: ${warning}.`]);
  if (left.length > 0)
    lines.push([`${left.length} left as they are: nothing of them was changed; see why above.`]);
  return { ...reply(lines), undo: answer };
}
