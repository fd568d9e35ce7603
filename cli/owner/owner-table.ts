/**
 * `broker grants` for a person: one row per active grant, in 80 columns (request,
 * instance, path, mode, expires in, used last). Agent-chosen text (paths) is escaped
 * for the terminal and shortened in the middle to fit.
 */
import type { GrantJson } from '../../broker/approval/owner/protocol.js';
import { formatTimeLeft } from '../../broker/approval/format.js';
import { forTerminal } from '../terminal.js';

const COLUMNS = [
  { title: 'REQ', width: 5 },
  { title: 'INSTANCE', width: 12 },
  { title: 'PATH', width: 29 },
  { title: 'MODE', width: 5 },
  { title: 'EXPIRES IN', width: 10 },
  { title: 'USED LAST', width: 12 },
] as const;

/** `text` in at most `width` characters: the middle replaced by `…` when longer. */
export function fit(text: string, width: number): string {
  const chars = [...text];
  if (chars.length <= width) return text;
  const head = Math.ceil((width - 1) / 2);
  const tail = width - 1 - head;
  return `${chars.slice(0, head).join('')}…${tail > 0 ? chars.slice(-tail).join('') : ''}`;
}

function row(cells: readonly string[]): string {
  return cells
    .map((cell, i) => {
      const width = COLUMNS[i]?.width ?? 10;
      const shown = fit(cell, width);
      return i === cells.length - 1 ? shown : shown.padEnd(width);
    })
    .join(' ')
    .trimEnd();
}

function usedLast(grant: GrantJson, now: number): string {
  if (grant.last_used_at === null) return '–';
  return `${formatTimeLeft(now - Date.parse(grant.last_used_at))} ago`;
}

export function grantsTable(grants: readonly GrantJson[], now: number): string {
  if (grants.length === 0) return 'No active grants.\n';
  const lines = [row(COLUMNS.map((c) => c.title))];
  for (const g of grants) {
    const path = g.kind === 'files' ? g.path : `${g.kind}:${g.path}`;
    lines.push(
      row([
        String(g.request),
        forTerminal(g.instance),
        forTerminal(path),
        g.mode,
        formatTimeLeft(g.expires_in_ms),
        usedLast(g, now),
      ]),
    );
  }
  return `${lines.join('\n')}\n`;
}
