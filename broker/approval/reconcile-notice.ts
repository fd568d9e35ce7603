/**
 * What the owner is told when reconciliation finds changes the broker did not make
 * (operations/reconcile/): which account, and each change's time, type and path, then
 * what to do. Posted to the approval room (or printed on the console) by the daemon.
 *
 * Security: a path here is a name someone chose on Nextcloud (whoever used the app
 * password), so it is shown as an agent's path is: escaped and capped (format.ts). A
 * rename's two paths are two code spans with the broker's own arrow between them, so a
 * name holding an arrow (escaped) cannot pass for a rename.
 */
import type { ReconcileReport } from '../operations/reconcile/report.js';
import { renderLines, type Line, type Rendered } from './format.js';

/** Changes listed in one notice; the rest are counted. */
export const LISTED_IN_NOTICE = 10;

export function renderUnexplained(report: ReconcileReport): Rendered {
  const changes = report.unexplained;
  const count = changes.length;
  const instances = report.instances.map((i) => `'${i}'`).join(', ');
  const lines: Line[] = [
    [
      {
        strong: `Nextcloud shows ${count} change${count === 1 ? '' : 's'} the broker did not make`,
      },
      ` with the account ${report.user} (instance ${instances}):`,
    ],
    ...changes
      .slice(0, LISTED_IN_NOTICE)
      .map((c): Line => [
        `${c.time.replace('T', ' ').replace(/\.\d+Z$/, 'Z')} ${c.type} `,
        ...(c.old_path === undefined ? [] : [{ code: c.old_path }, ' → ']),
        { code: c.path },
      ]),
  ];
  if (count > LISTED_IN_NOTICE)
    lines.push([
      `… and ${count - LISTED_IN_NOTICE} more: run \`broker reconcile --json\` for all.`,
    ]);
  lines.push([
    'If you did not make them yourself with that account, someone else holds its app password: revoke it in Nextcloud (Settings → Security → Devices & sessions) and see the runbook, "Unexplained changes".',
  ]);
  return renderLines(lines);
}
