/**
 * The ids of the doctor's own requests to Nextcloud, recorded in the audit log like every
 * request of the broker's (`nc_requests`, source `doctor`), so that none looks foreign in
 * Nextcloud's logs: through the running broker's owner socket, or, with the broker
 * stopped, appended to the log directly. Before the broker ever ran there is no log to
 * record them in, and the doctor says so. A doctor's ids never explain a file action:
 * it reads no file (operations/reconcile/admin-audit.ts).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { askOwner } from '../approval/owner/client.js';
import { MAX_RECORDED_IDS } from '../approval/owner/protocol.js';
import { OwnerSocketError } from '../approval/owner/safety.js';
import { AuditLog, LOG_FILE } from '../audit/index.js';
import type { NextcloudAnswer } from '../nextcloud/answers.js';
import { type Check, pass, skip, warn } from './checklist.js';

type Batches = readonly (readonly [instance: string, ids: readonly string[]])[];

function batchesOf(answers: ReadonlyMap<string, readonly NextcloudAnswer[]>): Batches {
  const batches: [string, string[]][] = [];
  for (const [instance, list] of answers)
    for (let i = 0; i < list.length; i += MAX_RECORDED_IDS)
      batches.push([instance, list.slice(i, i + MAX_RECORDED_IDS).map((a) => a.requestId)]);
  return batches;
}

async function throughBroker(dataDir: string, batches: Batches): Promise<boolean> {
  try {
    for (const [instance, ids] of batches) {
      const answer = await askOwner(dataDir, { op: 'requests', instance, ids: [...ids] });
      if (!answer.ok) throw new Error(answer.error);
    }
    return true;
  } catch (error) {
    if (error instanceof OwnerSocketError && error.code === 'no_broker') return false;
    throw error;
  }
}

async function directly(dataDir: string, batches: Batches): Promise<void> {
  const log = await AuditLog.open(dataDir, { now: Date.now });
  try {
    for (const [instance, ids] of batches)
      await log.append({
        event: 'nc_requests',
        instance,
        source: 'doctor',
        nc_request_ids: [...ids],
      });
  } finally {
    await log.close();
  }
}

export async function recordDoctorRequests(
  dataDir: string,
  answers: ReadonlyMap<string, readonly NextcloudAnswer[]>,
): Promise<Check> {
  const batches = batchesOf(answers);
  const count = batches.reduce((n, [, ids]) => n + ids.length, 0);
  if (count === 0) return skip('the doctor’s requests: none answered with a request id');
  if (!existsSync(join(dataDir, LOG_FILE)))
    return skip(
      `the doctor’s ${count} request ids: not recorded (no audit log yet: the broker has not run)`,
    );
  try {
    const how = (await throughBroker(dataDir, batches)) ? 'through the running broker' : 'directly';
    if (how === 'directly') await directly(dataDir, batches);
    return pass(
      `the doctor’s ${count} request ids are in the audit log (${how}), as the broker’s own`,
    );
  } catch (error) {
    return warn(
      `the doctor’s ${count} request ids were not recorded (${error instanceof Error ? error.message : 'unknown error'}): in Nextcloud's logs they look like another client's`,
      'run doctor again once the broker answers (or is stopped)',
    );
  }
}
