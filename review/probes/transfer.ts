/**
 * State probes on the real daemon (support/daemon.ts): a grant ending while bytes
 * are moving (revoke by instance, expiry, an unrelated revoke), tickets used twice, the
 * wrong way, or after their grant or lock is gone, and the broker clock going backwards
 * (grants, pending requests, tickets).
 */
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { startBroker, type Broker, H } from '../../support/daemon.js';
import { auditVerdict } from '../lib/audit-check.js';
import { fetchedEtag, getBlob, putBlob, type BlobDownload } from '../../support/blobs.js';
import { until } from '../../support/until.js';
import type { Case, Group } from '../runner.js';
import { TRANSFER_TOKEN } from '../../support/tokens.js';
import { call } from '../../support/mcp.js';

const BIG = 16 * 1024 * 1024;

async function ticket(b: Broker, tool: string, args: Record<string, unknown>): Promise<string> {
  const transfer = await b.transfer();
  const answer = await call(transfer, tool, { instance: 'personal', ...args });
  if (answer.status !== 'ok') throw new Error(`${tool}: ${answer.status} ${answer.message}`);
  return answer.blob_url as string;
}

/** The last audit outcome of a blob call. */
function lastBlobOutcome(b: Broker, tool: 'blob_get' | 'blob_put'): string {
  const line = b
    .auditLines()
    .filter((l) => l.tool === tool && l.event === 'outcome')
    .at(-1);
  return line === undefined
    ? 'no outcome'
    : `${String(line.outcome)} ${String(line.code ?? '')}`.trim();
}

/** The download ended normally, with the sha256 trailer. */
const streamed = (r: BlobDownload): boolean =>
  r.complete && typeof r.trailers['x-broker-sha256'] === 'string';

async function settleAudit(): Promise<void> {
  await sleep(100);
}

function streamCases(b: Broker): Case[] {
  const cutDownload = async (
    folder: string,
    end: () => Promise<void>,
    instance = 'personal',
  ): Promise<string> => {
    await b.fake.writeFile(`${folder}/big.bin`, randomBytes(BIG));
    const url = await ticket(b, 'read', { instance, path: `${folder}/big.bin` });
    const r = await getBlob(b.url, url, TRANSFER_TOKEN, { pauseAfter: 256 * 1024, midway: end });
    await settleAudit();
    const cut = !streamed(r) && r.received < BIG ? 'cut' : `not cut (${r.received} bytes)`;
    return `${cut}, ${lastBlobOutcome(b, 'blob_get')}, ${b.server.inFlight.size} in flight`;
  };
  return [
    {
      name: '"revoke shared" (by instance) while a 16 MiB download is half way: stream cut, audited grant_revoked',
      expect: 'cut, refused grant_revoked, 0 in flight',
      run: async () => {
        await b.grant([{ path: 'S1', mode: 'read' }], 'shared');
        return cutDownload(
          'S1',
          async () => {
            await b.gateway.decide('revoke shared');
          },
          'shared',
        );
      },
    },
    {
      name: 'revoking an unrelated request while a download runs changes nothing',
      expect: 'complete, ok',
      run: async () => {
        await b.grant([{ path: 'S3', mode: 'read' }]);
        const other = await b.grant([{ path: 'S3other', mode: 'read' }]);
        await b.fake.writeFile('S3/big.bin', randomBytes(BIG / 4));
        const url = await ticket(b, 'read', { path: 'S3/big.bin' });
        const r = await getBlob(b.url, url, TRANSFER_TOKEN, {
          pauseAfter: 64 * 1024,
          midway: async () => {
            await b.gateway.decide(`revoke ${other}`);
          },
        });
        await settleAudit();
        return `${streamed(r) ? 'complete' : 'cut'}, ${lastBlobOutcome(b, 'blob_get')}`;
      },
    },
    {
      name: 'revoke while a new file is half uploaded: aborted, nothing half-written on Nextcloud',
      expect: 'aborted (refused grant_revoked), nothing written',
      run: async () => {
        const id = await b.grant([{ path: 'U1', mode: 'write' }]);
        await b.fake.writeFile('U1/.keep', '');
        const content = randomBytes(4 * 1024 * 1024);
        const url = await ticket(b, 'write', {
          path: 'U1/new.bin',
          size: content.length,
          if_none_match: '*',
        });
        const r = await putBlob(b.url, url, TRANSFER_TOKEN, content, {
          sendFirst: content.length / 2,
          midway: async () => {
            await sleep(150);
            await b.gateway.decide(`revoke ${id}`);
          },
        });
        await settleAudit();
        const exists = await b.fake.exists('U1/new.bin');
        return `${r.status === 200 ? 'stored' : `aborted (${lastBlobOutcome(b, 'blob_put')})`}, ${exists ? 'file exists' : 'nothing written'}`;
      },
    },
    {
      name: 'revoke while a replacement is half uploaded: aborted, the old content intact',
      expect: 'aborted (refused grant_revoked), old content intact',
      run: async () => {
        const id = await b.grant([{ path: 'U2', mode: 'write' }]);
        await b.fake.writeFile('U2/doc.txt', 'the owner version');
        const etag = await fetchedEtag(b.url, await b.transfer(), 'U2/doc.txt');
        const content = randomBytes(4 * 1024 * 1024);
        const url = await ticket(b, 'write', {
          path: 'U2/doc.txt',
          size: content.length,
          if_match: etag,
        });
        const r = await putBlob(b.url, url, TRANSFER_TOKEN, content, {
          sendFirst: content.length / 2,
          midway: async () => {
            await sleep(150);
            await b.gateway.decide(`revoke ${id}`);
          },
        });
        await settleAudit();
        const now = (await b.fake.readFile('U2/doc.txt'))?.toString();
        return `${r.status === 200 ? 'stored' : `aborted (${lastBlobOutcome(b, 'blob_put')})`}, ${now === 'the owner version' ? 'old content intact' : 'content changed'}`;
      },
    },
    {
      name: 'the grant expires (clock past expiry, sweep) while a download is half way (last: it expires every grant)',
      expect: 'cut, refused grant_expired, 0 in flight',
      run: async () => {
        await b.grant([{ path: 'S2', mode: 'read' }]);
        return cutDownload('S2', async () => {
          b.clock.offset += 25 * H;
          try {
            await b.server.sweep();
          } finally {
            b.clock.offset -= 25 * H;
          }
        });
      },
    },
  ];
}

function ticketCases(b: Broker): Case[] {
  const fresh = async (name: string): Promise<string> => {
    await b.fake.writeFile(`K/${name}`, `content of ${name}`);
    return ticket(b, 'read', { path: `K/${name}` });
  };
  return [
    {
      name: 'two GETs of one ticket at the same instant: exactly one streams',
      expect: '200 ×1, 404 ×1',
      run: async () => {
        const url = await fresh('twice.txt');
        const rs = await Promise.all([
          getBlob(b.url, url, TRANSFER_TOKEN),
          getBlob(b.url, url, TRANSFER_TOKEN),
        ]);
        return `200 ×${rs.filter((r) => r.status === 200).length}, 404 ×${rs.filter((r) => r.status === 404).length}`;
      },
    },
    {
      name: 'a read ticket presented to PUT is refused (and spent), never written through',
      expect: '404, then 404, content unchanged',
      run: async () => {
        const url = await fresh('wrong-way.txt');
        const put = await putBlob(b.url, url, TRANSFER_TOKEN, Buffer.from('overwrite!'));
        const get = await getBlob(b.url, url, TRANSFER_TOKEN);
        const now = (await b.fake.readFile('K/wrong-way.txt'))?.toString();
        return `${put.status}, then ${get.status}, content ${now === 'content of wrong-way.txt' ? 'unchanged' : 'changed'}`;
      },
    },
    {
      name: 'a ticket whose grant was revoked and granted again on the same path stays dead, and says why',
      expect: '403 grant_revoked',
      run: async () => {
        await b.fake.writeFile('K2/x.txt', 'x');
        const id = await b.grant([{ path: 'K2', mode: 'read' }]);
        const url = await ticket(b, 'read', { path: 'K2/x.txt' });
        await b.gateway.decide(`revoke ${id}`);
        await b.grant([{ path: 'K2', mode: 'read' }]);
        const r = await getBlob(b.url, url, TRANSFER_TOKEN);
        return `${r.status} ${r.status === 200 ? '' : ((JSON.parse(r.body.toString()) as { code?: string }).code ?? '')}`.trim();
      },
    },
    {
      name: 'a ticket issued under a grant on one file stays dead after that grant is revoked, though a wider grant now covers the file',
      expect: '403',
      run: async () => {
        await b.fake.writeFile('K3/a.txt', 'a');
        const narrow = await b.grant([{ path: 'K3/a.txt', mode: 'read' }]);
        const url = await ticket(b, 'read', { path: 'K3/a.txt' });
        await b.grant([{ path: 'K3', mode: 'read' }]);
        await b.gateway.decide(`revoke ${narrow}`);
        return String((await getBlob(b.url, url, TRANSFER_TOKEN)).status);
      },
    },
    {
      name: 'revoke while the checkout LOCK is on its way to Nextcloud: refused, no lock left behind',
      expect: 'refused grant_revoked, no lock left',
      run: async () => {
        await b.fake.writeFile('L/doc.txt', 'x');
        const id = await b.grant([{ path: 'L', mode: 'write' }]);
        const transfer = await b.transfer();
        const seen = b.fake.requests.length;
        b.fake.faults.slowMs = 300;
        try {
          const answer = call(transfer, 'checkout', { instance: 'personal', path: 'L/doc.txt' });
          await until(
            'the LOCK on its way to Nextcloud',
            () => b.fake.requests.slice(seen).some((r) => r.method === 'LOCK'),
            5_000,
            5,
          );
          await b.gateway.decide(`revoke ${id}`);
          const out = await answer;
          b.fake.faults.slowMs = 0;
          await sleep(100);
          const lock = b.fake.lockOf('L/doc.txt');
          return `${out.status} ${out.code ?? ''}, ${lock === undefined ? 'no lock left' : 'lock left behind'}`;
        } finally {
          b.fake.faults.slowMs = 0;
        }
      },
    },
    {
      name: 'a ticket with one character changed, and in upper case',
      expect: '404/404',
      run: async () => {
        const url = await fresh('forged.txt');
        const id = url.split('/').at(-1) ?? '';
        const flipped = `${id.slice(0, -1)}${id.endsWith('A') ? 'B' : 'A'}`;
        const a = await getBlob(b.url, `/transfer/blobs/${flipped}`, TRANSFER_TOKEN);
        const c = await getBlob(
          b.url,
          `/transfer/blobs/${id.toUpperCase() === id ? id.toLowerCase() : id.toUpperCase()}`,
          TRANSFER_TOKEN,
        );
        return `${a.status}/${c.status}`;
      },
    },
    {
      name: 'a checkin ticket used after its lock was abandoned: refused, content unchanged',
      expect: 'refused, unchanged',
      run: async () => {
        await b.fake.writeFile('K/locked.txt', 'before');
        const transfer = await b.transfer();
        const out = await call(transfer, 'checkout', {
          instance: 'personal',
          path: 'K/locked.txt',
        });
        const url = await ticket(b, 'checkin', {
          path: 'K/locked.txt',
          lock_token: out.lock_token,
          size: 5,
        });
        await call(transfer, 'checkin', {
          instance: 'personal',
          path: 'K/locked.txt',
          lock_token: out.lock_token,
          abandon: true,
        });
        const r = await putBlob(b.url, url, TRANSFER_TOKEN, Buffer.from('after'));
        const now = (await b.fake.readFile('K/locked.txt'))?.toString();
        return `${r.status === 200 ? 'stored' : 'refused'}, ${now === 'before' ? 'unchanged' : 'changed'}`;
      },
    },
  ];
}

function clockCases(b: Broker): Case[] {
  const agentList = async (path: string): Promise<string> => {
    const agent = await b.agent();
    const e = await call(agent, 'list', { instance: 'personal', path });
    return `${e.status}${e.code === undefined ? '' : ` ${e.code}`}`;
  };
  /** Asks for read access to `folder`; returns the request id, undecided. */
  const requestRead = async (folder: string): Promise<number> => {
    const agent = await b.agent();
    const req = await call(agent, 'request_access', {
      instance: 'personal',
      reason: 'clock',
      items: [{ path: folder, mode: 'read' }],
    });
    return req.request as number;
  };
  return [
    {
      name: 'a grant the sweep marked expired stays dead when the clock goes back 2 h',
      expect: 'ok, then refused grant_expired',
      run: async () => {
        await b.fake.writeFile('C1/a.txt', 'a');
        const id = await requestRead('C1');
        await b.gateway.decide(`approve ${id} 1h`);
        const before = await agentList('C1');
        b.clock.offset += 2 * H;
        await b.server.sweep();
        b.clock.offset -= 4 * H; // now 2 h before the approval
        try {
          return `${before}, then ${await agentList('C1')}`;
        } finally {
          b.clock.offset += 2 * H;
        }
      },
    },
    {
      name: 'a pending request the sweep expired cannot be approved after the clock goes back 13 h',
      expect: 'expired, nothing granted',
      run: async () => {
        const id = await requestRead('C2');
        b.clock.offset += 13 * H;
        await b.server.sweep();
        b.clock.offset -= 13 * H;
        await b.gateway.decide(`approve ${id}`);
        const state = b.store.getRequest(id)?.state;
        const granted = b.store.activeGrants().some((g) => g.requestId === id);
        return `${state}, ${granted ? 'granted' : 'nothing granted'}`;
      },
    },
    {
      name: 'a redeemed ticket stays spent when the clock goes back 1 h',
      expect: '200, then 404',
      run: async () => {
        await b.fake.writeFile('K/clock.txt', 'x');
        const url = await ticket(b, 'read', { path: 'K/clock.txt' });
        const first = await getBlob(b.url, url, TRANSFER_TOKEN);
        b.clock.offset -= H;
        try {
          return `${first.status}, then ${(await getBlob(b.url, url, TRANSFER_TOKEN)).status}`;
        } finally {
          b.clock.offset += H;
        }
      },
    },
    {
      name: 'a ticket refused as expired (+61 s) stays dead when the clock comes back',
      expect: '404/404',
      run: async () => {
        await b.fake.writeFile('K/late.txt', 'x');
        const url = await ticket(b, 'read', { path: 'K/late.txt' });
        b.clock.offset += 61_000;
        let late: number;
        try {
          late = (await getBlob(b.url, url, TRANSFER_TOKEN)).status;
        } finally {
          b.clock.offset -= 61_000;
        }
        return `${late}/${(await getBlob(b.url, url, TRANSFER_TOKEN)).status}`;
      },
    },
    {
      name: 'approved while the clock was 2 h behind, "1h": already over once the clock is corrected',
      // It was granted, and it is over: the agent is told it expired (not "no grant").
      expect: 'refused grant_expired',
      run: async () => {
        await b.fake.writeFile('C5/a.txt', 'a');
        const id = await requestRead('C5');
        b.clock.offset -= 2 * H;
        try {
          await b.gateway.decide(`approve ${id} 1h`);
        } finally {
          b.clock.offset += 2 * H;
        }
        return agentList('C5');
      },
    },
  ];
}

export const transferGroup: Group = {
  title: 'probes: revoke and expiry during transfers, ticket reuse, the clock going backwards',
  async build() {
    const b = await startBroker();
    await b.grant([{ path: 'K', mode: 'write' }]);
    return {
      // Stream cases last: their revokes and the +25 h sweep end grants the others rely on.
      cases: [
        ...ticketCases(b),
        ...clockCases(b),
        ...streamCases(b),
        {
          name: 'after the cut streams and aborted uploads: the audit chain verifies, each intent has one outcome',
          expect: 'intact',
          run: async () => {
            await sleep(100);
            const v = auditVerdict(b.dir, b.auditLines());
            return v.startsWith('verifies') ? 'intact' : v;
          },
        },
      ],
      teardown: () => b.close(),
    };
  },
};
