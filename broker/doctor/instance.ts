/**
 * Everything the doctor checks of one Nextcloud instance, as sections: the server and
 * the credentials (nextcloud.ts), then, once signed in, the broker's account (account.ts)
 * and reconciliation (reconcile.ts), on one connection whose answers' request ids are
 * collected for the audit log (requests.ts).
 */
import type { BrokerConfig, InstanceConfig } from '../config.js';
import type { AnswerSink } from '../nextcloud/answers.js';
import { NextcloudConnection } from '../nextcloud/connection.js';
import { checkAccount } from './account.js';
import type { CheckSection } from './checklist.js';
import { checkInstance } from './nextcloud.js';
import { checkReconcile } from './reconcile.js';

export async function instanceSections(
  inst: InstanceConfig,
  config: Pick<BrokerConfig, 'data_dir' | 'instances' | 'reconcile'>,
  deps: { timeoutMs: number; onAnswer: AnswerSink },
): Promise<CheckSection[]> {
  const checks = await checkInstance(inst, deps);
  const sections: CheckSection[] = [{ title: `Nextcloud instance "${inst.name}"`, checks }];
  // The second check is the credentials': the account's checks need them accepted.
  if (checks[1]?.status !== 'pass') return sections;
  const conn = new NextcloudConnection(inst, deps);
  try {
    sections.push({
      title: `The broker's account on "${inst.name}" (${inst.username})`,
      checks: await checkAccount(inst, conn),
    });
    sections.push({
      title: `Reconciliation on "${inst.name}"`,
      checks: await checkReconcile(inst, conn, config),
    });
  } finally {
    conn.close();
  }
  return sections;
}
