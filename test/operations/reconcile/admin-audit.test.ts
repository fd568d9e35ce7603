/**
 * An admin_audit log checked against the request ids the broker recorded
 * (broker/operations/reconcile/admin-audit.ts), with lines as Nextcloud 34.0.1 and 29.0.5
 * wrote them (docs/nextcloud-behaviour.md "admin_audit"): every file action of the
 * account whose request the broker did not send is unexplained, reads included; login
 * lines, other users' lines and a doctor's ids explain nothing and count for nothing.
 */
import { describe, expect, it } from 'vitest';
import {
  checkAdminAudit,
  readAdminAudit,
} from '../../../broker/operations/reconcile/admin-audit.js';
import { AuditFactsBuilder } from '../../../broker/operations/reconcile/audited.js';

const line = (
  reqId: string,
  user: string,
  method: string,
  message: string,
  time = '2026-12-04T17:28:23+00:00',
) =>
  JSON.stringify({
    reqId,
    level: 1,
    time,
    remoteAddr: '127.0.0.1',
    user,
    app: 'admin_audit',
    method,
    url: '/remote.php/dav/files/bob/x',
    message,
    userAgent: 'curl',
    version: '34.0.1.2',
    data: { app: 'admin_audit' },
  });

const OBSERVED_34 = [
  line('R1', '--', 'GET', 'Login attempt: "bob"'),
  line('R1', 'bob', 'GET', 'Login successful: "bob"'),
  line('R1', 'bob', 'GET', 'File with id "151" accessed: "/bob/files/au.txt"'),
  line('R2', 'bob', 'PUT', 'File with id "153" created: "/bob/files/au2.txt"'),
  line('R2', 'bob', 'PUT', 'File with id "153" written to: "/bob/files/au2.txt"'),
  line('R3', 'bob', 'MOVE', 'File renamed with id "153" from "/bob/files/a" to "/bob/files/b"'),
  line('R4', 'bob', 'DELETE', 'File with id "155" deleted: "/bob/files/au4.txt"'),
  line(
    'R5',
    'bob',
    'PUT',
    'Cache entry inserted for fileid "152", path "files_versions/au.txt.v1"',
  ),
  line('R6', 'alice', 'GET', 'File with id "9" accessed: "/alice/files/hers.txt"'),
];
const OBSERVED_29 = [
  line('S1', 'bob', 'GET', 'File accessed: "/au.txt"'),
  line('S2', 'bob', 'PUT', 'File updated: "/au.txt"'),
  line('S2', 'bob', 'PUT', 'File written to: "/au.txt"'),
  line('S3', 'bob', 'PUT', 'File created: "//au2.txt"'),
  line('S4', 'bob', 'MOVE', 'File renamed: "/a" to "/b"'),
  line('S5', 'bob', 'COPY', 'File copied: "/a" to "/b"'),
  line('S6', 'bob', 'DELETE', 'File deleted: "/au4.txt"'),
  line('S7', 'bob', 'MOVE', 'File "/au4.txt" restored from trash bin.'),
];

/** The facts of a log whose outcomes recorded these ids (and a doctor run's). */
function recorded(ids: string[], doctor: string[] = []) {
  const facts = new AuditFactsBuilder();
  facts.add({
    event: 'intent',
    ts: '2026-12-04T17:28:00.000Z',
    correlation_id: 'c',
    tool: 'blob_put',
    instance: 'personal',
    path: 'x',
  });
  facts.add({
    event: 'outcome',
    ts: '2026-12-04T17:28:01.000Z',
    correlation_id: 'c',
    tool: 'blob_put',
    instance: 'personal',
    outcome: 'ok',
    nc_request_ids: ids,
  });
  facts.add({
    event: 'nc_requests',
    ts: '2026-12-04T17:28:02.000Z',
    instance: 'personal',
    source: 'doctor',
    nc_request_ids: doctor,
  });
  return facts.facts();
}

describe('the file actions of the account', () => {
  it('are read in 34’s words and 29’s: reads, writes, creates, renames, copies, deletes, restores', () => {
    const read34 = readAdminAudit(OBSERVED_34.join('\n'), 'bob', 0);
    expect(read34.actions.map((a) => a.reqId)).toEqual(['R1', 'R2', 'R2', 'R3', 'R4']);
    const read29 = readAdminAudit(OBSERVED_29.join('\n'), 'bob', 0);
    expect(read29.actions.map((a) => a.reqId)).toEqual([
      'S1',
      'S2',
      'S2',
      'S3',
      'S4',
      'S5',
      'S6',
      'S7',
    ]);
  });

  it('counts a line that is not admin_audit’s as unreadable, and reads on', () => {
    const read = readAdminAudit(
      `not json\n[1]\n${OBSERVED_34[2] ?? ''}\n{"message":"x"}\n`,
      'bob',
      0,
    );
    expect(read).toMatchObject({ unreadable: 3, actions: [{ reqId: 'R1' }] });
  });

  it('starts at `since`', () => {
    const read = readAdminAudit(OBSERVED_34.join('\n'), 'bob', Date.parse('2026-12-04T17:28:24Z'));
    expect(read.actions).toEqual([]);
  });
});

describe('a file action under a request id the broker did not record', () => {
  it('is unexplained, a read as much as a write', () => {
    const { actions } = readAdminAudit(OBSERVED_34.join('\n'), 'bob', 0);
    const found = checkAdminAudit(actions, recorded(['R2', 'R4']), ['personal'], 2000);
    expect(found.unexplained.map((a) => [a.reqId, a.method])).toEqual([
      ['R1', 'GET'],
      ['R3', 'MOVE'],
    ]);
    expect(found.pending).toEqual([]);
  });

  it('is unexplained when only a doctor run recorded that id: a doctor reads no file', () => {
    const { actions } = readAdminAudit(OBSERVED_29.join('\n'), 'bob', 0);
    const found = checkAdminAudit(actions, recorded([], ['S1']), ['personal'], 2000);
    expect(found.unexplained.map((a) => a.reqId)).toContain('S1');
  });

  it('is pending, not unexplained, while an operation of the account is still open', () => {
    const facts = new AuditFactsBuilder();
    facts.add({
      event: 'intent',
      ts: '2026-12-04T17:28:20.000Z',
      correlation_id: 'c',
      tool: 'blob_put',
      instance: 'personal',
      path: 'x',
    });
    const { actions } = readAdminAudit(OBSERVED_34.join('\n'), 'bob', 0);
    const found = checkAdminAudit(actions, facts.facts(), ['personal'], 2000);
    expect(found.unexplained).toEqual([]);
    expect(found.pending).toHaveLength(5);
    // An open operation of another account's instance makes nothing of this one pending.
    expect(checkAdminAudit(actions, facts.facts(), ['work'], 2000).pending).toEqual([]);
  });
});
