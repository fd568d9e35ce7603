/**
 * Uploads that do not fit the user's quota (docs/nextcloud-behaviour.md, "Quota and
 * locks during an upload"): the fake's `faults.quotaBytes` against the real server's
 * `occ user:setting <user> files quota`. The bodies are larger than the quota; every
 * refusal is a 507 with Sabre's InsufficientStorage and the same message.
 */
import type { Case, Step } from './steps.js';

const MiB = 1024 * 1024;
const UPLOADS = '/remote.php/dav/uploads/{user}';
/** More than the quota of the cases below. */
const BIG = Buffer.alloc(2 * MiB, 7);

const chunk = (name: string, id: string, n: string, total: number | undefined): Step => ({
  name,
  method: 'PUT',
  target: `${UPLOADS}/${id}/${n}`,
  headers: {
    'Content-Type': 'application/octet-stream',
    Destination: '{files}/Q/big.bin',
    ...(total === undefined ? {} : { 'OC-Total-Length': String(total) }),
    'X-Hash': 'sha256',
  },
  body: BIG,
});

export const QUOTA_CASES: readonly Case[] = [
  {
    name: 'a quota of 1 MB: a file PUT, a chunk announcing too much and the MOVE of too much are 507',
    quota: { occ: '1 MB', bytes: MiB },
    steps: [
      { name: 'MKCOL', method: 'MKCOL', target: '~/Q' },
      {
        name: 'PUT a file larger than the quota',
        method: 'PUT',
        target: '~/Q/direct.bin',
        headers: { 'Content-Type': 'application/octet-stream', 'If-None-Match': '*' },
        body: BIG,
      },
      {
        name: 'MKCOL an upload folder',
        method: 'MKCOL',
        target: `${UPLOADS}/q1`,
        headers: { Destination: '{files}/Q/big.bin' },
      },
      chunk('PUT a chunk with OC-Total-Length above the quota', 'q1', '1', BIG.length),
      chunk('PUT a chunk without OC-Total-Length', 'q1', '2', undefined),
      {
        name: 'MOVE of .file that does not fit',
        method: 'MOVE',
        target: `${UPLOADS}/q1/.file`,
        headers: { Destination: '{files}/Q/big.bin', Overwrite: 'F' },
      },
      { name: 'DELETE probe: the folder is kept', method: 'DELETE', target: `${UPLOADS}/q1` },
      { name: 'PROPFIND probe: nothing stored', method: 'PROPFIND', target: '~/Q/big.bin' },
    ],
  },
];
