/**
 * The soak's checkers must catch what they claim to: a request with no intent, an
 * intent that became durable only after the request, an intent for another path, and
 * operations on revoked or expired grants.
 */
import { describe, expect, it } from 'vitest';
import {
  davPath,
  intentsPrecedeRequests,
  operationsInsideLiveGrants,
  type ArrivedRequest,
  type AuditLine,
} from './checks.js';

const ts = (ms: number): string => new Date(ms).toISOString();
const T = Date.UTC(2025, 0, 1);
const DAV = '/remote.php/dav/files/alice';

const records: AuditLine[] = [
  {
    seq: 1,
    ts: ts(T),
    event: 'decision',
    grants: [
      { id: 1, expires_at: ts(T + 60_000) },
      { id: 2, expires_at: ts(T + 1_000) },
    ],
  },
  { seq: 2, ts: ts(T + 10), event: 'intent', op: 'list', path: 'A/x', grants: [1] },
  { seq: 3, ts: ts(T + 20), event: 'intent', op: 'move', from: 'A/f', to: 'A/g', grants: [1] },
  { seq: 4, ts: ts(T + 30), event: 'revoke', outcome: 'revoked', grants: [1] },
  { seq: 5, ts: ts(T + 40), event: 'intent', op: 'list', path: 'A/late', grants: [1] },
  { seq: 6, ts: ts(T + 2_000), event: 'intent', op: 'read', path: 'B/old', grants: [2] },
  {
    seq: 7,
    ts: ts(T + 2_010),
    event: 'intent',
    tool: 'release',
    path: 'B/lock',
    grants: [2],
    reason: 'grant ended',
  },
];

describe('davPath', () => {
  it('decodes the user-relative path; OCS and other targets have none', () => {
    expect(davPath(`${DAV}/A/f%C3%BCr%20x.txt`, 'alice')).toBe('A/für x.txt');
    expect(davPath(`${DAV}/A/b?x=1`, 'alice')).toBe('A/b');
    expect(davPath(DAV, 'alice')).toBe('');
    expect(davPath('/ocs/v2.php/cloud/capabilities?format=json', 'alice')).toBeUndefined();
  });
});

describe('intentsPrecedeRequests', () => {
  it('accepts requests whose intent for the same path was durable first (move: from or to)', () => {
    const reqs: ArrivedRequest[] = [
      { method: 'PROPFIND', path: `${DAV}/A/x`, durableSeq: 2 },
      { method: 'MOVE', path: `${DAV}/A/f`, durableSeq: 3 },
      { method: 'GET', path: '/ocs/v2.php/cloud/capabilities', durableSeq: 3 },
    ];
    const r = intentsPrecedeRequests(reqs, records, 'alice');
    expect(r.violations).toEqual([]);
    expect(r.matched).toEqual([2, 3, 3]);
  });

  it('flags a request that arrived before its intent was durable, or with no intent for its path', () => {
    const reqs: ArrivedRequest[] = [
      { method: 'PROPFIND', path: `${DAV}/A/x`, durableSeq: 1 },
      { method: 'DELETE', path: `${DAV}/A/other`, durableSeq: 7 },
      { method: 'GET', path: '/ocs/v2.php/cloud/capabilities', durableSeq: 1 },
    ];
    const r = intentsPrecedeRequests(reqs, records, 'alice');
    expect(r.violations).toHaveLength(3);
  });

  it('lets reconciliation read the account’s own Activity without an intent, and nothing else by that name', () => {
    const reqs: ArrivedRequest[] = [
      {
        method: 'GET',
        path: '/ocs/v2.php/apps/activity/api/v2/activity/self?limit=1',
        durableSeq: 0,
      },
      { method: 'DELETE', path: '/ocs/v2.php/apps/activity/api/v2/activity/self', durableSeq: 0 },
    ];
    const r = intentsPrecedeRequests(reqs, records, 'alice');
    expect(r.violations.map((v) => v.detail)).toEqual([
      expect.stringMatching(/^request #1 DELETE/),
    ]);
  });
});

describe('intentsPrecedeRequests: what a write sends beside its own path', () => {
  it('a trash’s DELETE under its unique name, and the space read of a new file’s folder, count for their intent', () => {
    const reqs: ArrivedRequest[] = [
      { method: 'PROPFIND', path: `${DAV}/A`, durableSeq: 2 },
      { method: 'DELETE', path: `${DAV}/A/x%20(trashed%20abcdefgh)`, durableSeq: 2 },
    ];
    const r = intentsPrecedeRequests(reqs, records, 'alice');
    expect(r.violations).toEqual([]);
    expect(r.matched).toEqual([2, 2]);
  });

  it('but not anything else of the folder, nor another item’s unique name', () => {
    const reqs: ArrivedRequest[] = [
      { method: 'DELETE', path: `${DAV}/A`, durableSeq: 2 },
      { method: 'DELETE', path: `${DAV}/B/z%20(trashed%20abcdefgh).txt`, durableSeq: 7 },
    ];
    expect(intentsPrecedeRequests(reqs, records, 'alice').violations).toHaveLength(2);
  });
});

describe('intentsPrecedeRequests: chunked uploads', () => {
  it('a request into an upload folder belongs to the destination its MKCOL named', () => {
    const UP = '/remote.php/dav/uploads/alice';
    const reqs: ArrivedRequest[] = [
      { method: 'MKCOL', path: `${UP}/u1`, durableSeq: 2, destination: `http://nc${DAV}/A/x` },
      { method: 'PUT', path: `${UP}/u1/1`, durableSeq: 2 },
      { method: 'MOVE', path: `${UP}/u1/.file`, durableSeq: 2 },
      { method: 'PUT', path: `${UP}/u2/1`, durableSeq: 6 },
      { method: 'MKCOL', path: `${UP}/u3`, durableSeq: 1, destination: `http://nc${DAV}/A/x` },
    ];
    const r = intentsPrecedeRequests(reqs, records, 'alice');
    expect(r.matched.slice(0, 3)).toEqual([2, 2, 2]);
    // A folder no MKCOL named, and one whose destination has no durable intent yet.
    expect(r.violations.map((v) => v.detail)).toEqual([
      expect.stringContaining('upload folder u2 without a destination'),
      expect.stringContaining('no earlier intent for A/x'),
    ]);
  });
});

describe('operationsInsideLiveGrants', () => {
  it('flags an executed operation whose intent came after its grant was revoked or expired', () => {
    const reqs: ArrivedRequest[] = [
      { method: 'PROPFIND', path: `${DAV}/A/x`, durableSeq: 2 },
      { method: 'PROPFIND', path: `${DAV}/A/late`, durableSeq: 5 },
      { method: 'GET', path: `${DAV}/B/old`, durableSeq: 6 },
      { method: 'UNLOCK', path: `${DAV}/B/lock`, durableSeq: 7 },
    ];
    const { matched } = intentsPrecedeRequests(reqs, records, 'alice');
    const v = operationsInsideLiveGrants(reqs, matched, records);
    expect(v.map((x) => x.detail)).toEqual([
      expect.stringContaining('revoked at seq 4'),
      expect.stringContaining('expired'),
    ]);
  });
});
