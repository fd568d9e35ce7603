/**
 * Undo's answer, as the owner reads it in the room, on the console and in the shell: one
 * line per operation (its seq, its tool, where, what undo did or why it left it), then
 * what to do about what was left. Paths come from the audit log (the agent's), so they
 * are spans like every agent path (format.ts).
 */
import type { UndoResult } from '../audit/changes.js';
import type { UndoAnswer, UndoItem } from '../operations/undo/service.js';
import type { Line } from './format.js';
import { reply, say, type Reply } from './reply.js';

/** How many operations one answer lists (a Matrix event has a size limit). */
export const LISTED_UNDOS = 40;

const WORD: Record<UndoResult, string> = {
  undone: 'undone',
  already: 'done already',
  nothing: 'nothing to undo',
  would_undo: 'would undo',
  changed_since: 'LEFT AS IT IS: changed since',
  not_undoable: 'LEFT AS IT IS',
  failed: 'LEFT AS IT IS: failed',
};

function where(item: UndoItem): Line {
  if (item.from !== undefined && item.to !== undefined)
    return [{ code: item.to }, ' → ', { code: item.from }];
  return item.path === undefined ? [] : [{ code: item.path }];
}

function itemLine(item: UndoItem): Line {
  return [
    `#${item.seq} ${item.tool} `,
    ...where(item),
    ': ',
    { strong: WORD[item.result] },
    ' — ',
    { text: item.reason },
  ];
}

/** The reply to `undo …` (and `broker undo`'s text). */
export function renderUndo(answer: UndoAnswer): Reply {
  if (!answer.ok)
    return {
      ...say(`Undo: ${answer.message}.`, `Next: ${answer.nextStep}.`),
      refused: true,
      undo: answer,
    };
  const { target, items, dryRun } = answer;
  const what = 'seq' in target ? `operation ${target.seq}` : `request ${target.request}`;
  const left = items.filter((i) => ['changed_since', 'not_undoable', 'failed'].includes(i.result));
  const head =
    items.length === 0
      ? `Undo of ${what}: nothing it changed is on record.`
      : dryRun
        ? `Undo of ${what}, dry run (nothing was changed): ${items.length} operation(s), newest first.`
        : `Undo of ${what}: ${items.length - left.length} of ${items.length} operation(s) done, newest first.`;
  const lines: Line[] = [[head], ...items.slice(0, LISTED_UNDOS).map(itemLine)];
  if (items.length > LISTED_UNDOS)
    lines.push([
      `… and ${items.length - LISTED_UNDOS} more: run "broker undo … --json" on the broker's host for all.`,
    ]);
  for (const warning of answer.warnings) lines.push([`Warning: ${warning}.`]);
  if (left.length > 0)
    lines.push([
      `${left.length} left as they are: nothing of them was changed; see why above (the audit log's undo lines say what is there now).`,
    ]);
  return { ...reply(lines), undo: answer };
}
