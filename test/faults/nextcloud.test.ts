/**
 * Nextcloud misbehaving, seen through the whole broker (MCP over HTTP, both surfaces,
 * the blob endpoint): down, slower than the client's timeout, answering 5xx, 507, 429,
 * and rejecting the app password (401). Every operation must come back promptly as a
 * clean `error` envelope that says whether to retry and what to do, with its outcome
 * audited; non-idempotent requests are never sent twice, and after a 401 the broker
 * sends nothing more with that password.
 *
 * (Per-verb status mapping and retry rules are unit-tested in test/nextcloud/; single
 * faults on single tools in test/surfaces/agent-tools.test.ts. This suite covers every
 * tool and the blob upload under each fault, end to end.)
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getBlob, putBlob } from '../../support/blobs.js';
import { callTool, type Envelope } from '../../support/mcp.js';
import { FAULT_RUN, startBroker, type Broker } from '../../support/daemon.js';
import { TRANSFER_TOKEN } from '../../support/tokens.js';

// Long enough that a healthy fake on a loaded 2-core machine always answers within it
// (at 300 ms the setup calls between faults timed out under load), short enough that the
// slow case stays quick.
const TIMEOUT_MS = 1_000;
/** An answer must come within this, whatever Nextcloud does (timeout + one retry + slack). */
const PROMPT_MS = 3 * TIMEOUT_MS + 1_000;
const NON_IDEMPOTENT = new Set(['MKCOL', 'MOVE', 'DELETE', 'PUT', 'LOCK', 'UNLOCK']);

interface Expectation {
  fault: string;
  set: (rig: Broker) => void;
  code: string;
  retry: boolean;
  settleMs?: number;
  /**
   * What an upload answers instead, where it differs: Nextcloud's refusal of an upload
   * is a refusal (the CLI exits 3), never "retry later".
   */
  upload?: { status: 'refused'; code: string };
}

const FAULTS: Expectation[] = [
  {
    fault: 'down (connections dropped)',
    set: (r) => (r.fake.faults.down = true),
    code: 'nextcloud_unavailable',
    retry: true,
  },
  {
    fault: 'slower than the timeout',
    set: (r) => (r.fake.faults.slowMs = 5 * TIMEOUT_MS),
    code: 'nextcloud_unavailable',
    retry: true,
    // The slow server still carries out what the broker gave up on (a real server
    // would too); let those late changes land before the next case looks at the files.
    settleMs: 5 * TIMEOUT_MS + 500,
  },
  {
    fault: '500',
    set: (r) => (r.fake.faults.status = 500),
    code: 'nextcloud_unavailable',
    retry: true,
  },
  {
    fault: '503',
    set: (r) => (r.fake.faults.status = 503),
    code: 'nextcloud_unavailable',
    retry: true,
  },
  {
    fault: '507 insufficient storage',
    set: (r) => (r.fake.faults.status = 507),
    code: 'insufficient_storage',
    retry: false,
    upload: { status: 'refused', code: 'insufficient_storage' },
  },
  {
    fault: '429 throttled',
    set: (r) => (r.fake.faults.status = 429),
    code: 'nextcloud_unavailable',
    retry: true,
  },
];

let rig: Broker;
let agent: Client;
let transfer: Client;

beforeAll(async () => {
  rig = await startBroker({
    ...FAULT_RUN,
    nextcloud: { ...FAULT_RUN.nextcloud, timeoutMs: TIMEOUT_MS },
  });
  agent = await rig.agent();
  transfer = await rig.transfer();
  await rig.fake.writeFile('F/a.txt', 'content of a');
  await rig.grant([{ path: 'F', mode: 'write' }]);
});
afterAll(async () => {
  await rig.close();
});

type Answer = [op: string, envelope: Envelope, ms: number];

/** How long the next case waits for late side effects of the previous one. */
let settleBeforeNext = 0;

/** Runs one call and times it. */
async function timed(op: string, call: () => Promise<Envelope>): Promise<Answer> {
  const t = performance.now();
  const envelope = await call();
  return [op, envelope, performance.now() - t];
}

/**
 * Each tool once, and a blob upload and download whose tickets were issued before the
 * fault (the read tool asks Nextcloud nothing: its blob GET meets the fault instead).
 */
async function everyOperation(
  tag: string,
  uploadTicket: string,
  readTicket: string,
): Promise<Answer[]> {
  const i = 'personal';
  const body = Buffer.from('upload body');
  return [
    await timed('blob PUT', async () => {
      const put = await putBlob(rig.url, uploadTicket, TRANSFER_TOKEN, body);
      return put.json as Envelope;
    }),
    await timed('list', () => callTool(agent, 'list', { instance: i, path: 'F' })),
    await timed('mkdir', () => callTool(agent, 'mkdir', { instance: i, path: `F/new-${tag}` })),
    await timed('move', () =>
      callTool(agent, 'move', { instance: i, from: 'F/a.txt', to: `F/b-${tag}.txt` }),
    ),
    await timed('trash', () => callTool(agent, 'trash', { instance: i, path: 'F/a.txt' })),
    await timed('blob GET', async () => {
      const got = await getBlob(rig.url, readTicket, TRANSFER_TOKEN);
      return JSON.parse(got.body.toString()) as Envelope;
    }),
    await timed('write', () =>
      callTool(transfer, 'write', {
        instance: i,
        path: `F/w-${tag}.txt`,
        size: 3,
        if_none_match: '*',
      }),
    ),
  ];
}

async function readTicket(): Promise<string> {
  const t = await callTool(transfer, 'read', { instance: 'personal', path: 'F/a.txt' });
  expect(t.status).toBe('ok');
  return String(t.blob_url);
}

async function uploadTicket(tag: string): Promise<string> {
  const t = await callTool(transfer, 'write', {
    instance: 'personal',
    path: `F/up-${tag}.txt`,
    size: Buffer.byteLength('upload body'),
    if_none_match: '*',
  });
  expect(t.status).toBe('ok');
  return String(t.blob_url);
}

describe('Nextcloud faults through the whole broker', () => {
  it.each(FAULTS)(
    '$fault: every operation answers a prompt error envelope with the right retry advice',
    async (f) => {
      await new Promise((r) => setTimeout(r, settleBeforeNext));
      settleBeforeNext = 0;
      if (!(await rig.fake.exists('F/a.txt'))) await rig.fake.writeFile('F/a.txt', 'content of a');
      const ticket = await uploadTicket(f.fault.replace(/\W+/g, '-'));
      const read = await readTicket();
      rig.fake.reset();
      f.set(rig);
      let answers: Answer[];
      try {
        answers = await everyOperation(f.fault.replace(/\W+/g, '-'), ticket, read);
      } finally {
        rig.fake.reset();
        settleBeforeNext = f.settleMs ?? 0;
      }
      for (const [op, env, ms] of answers) {
        const where = `${op}: ${JSON.stringify(env)}`;
        if (op === 'blob PUT' && f.upload !== undefined) {
          expect(env, where).toMatchObject(f.upload);
        } else {
          expect(env.status, where).toBe('error');
          expect(env.code, where).toBe(f.code);
          expect(env.retry, where).toBe(f.retry);
        }
        expect(typeof env.hint === 'string' && env.hint.length > 0, where).toBe(true);
        expect(String(env.message), where).not.toMatch(/\n/);
        // No hang: bounded by the client's timeout, whatever Nextcloud does.
        expect(ms, where).toBeLessThan(PROMPT_MS);
      }
      // A change is never sent twice: a lost answer may mean it happened.
      const sent = new Map<string, number>();
      for (const r of rig.fake.requests) {
        if (!NON_IDEMPOTENT.has(r.method)) continue;
        const key = `${r.method} ${r.path}`;
        sent.set(key, (sent.get(key) ?? 0) + 1);
      }
      for (const [key, n] of sent) expect(n, key).toBe(1);
      // Nothing was changed on Nextcloud, and the file is where it was.
      expect(await rig.fake.exists('F/a.txt')).toBe(true);
    },
  );

  it('each fault answer is audited as an error (or, for an upload, refused) outcome of its intent', () => {
    const lines = rig.auditLines();
    const intents = new Map(
      lines.filter((l) => l.event === 'intent').map((l) => [l.correlation_id, l]),
    );
    const errors = lines.filter(
      (l) =>
        l.event === 'outcome' &&
        (l.outcome === 'error' || (l.tool === 'blob_put' && l.code === 'insufficient_storage')),
    );
    expect(errors.length).toBeGreaterThanOrEqual(FAULTS.length * 7);
    for (const e of errors) expect(intents.has(e.correlation_id)).toBe(true);
  });
});

describe('credential lock-out attack: Nextcloud rejects the app password (401)', () => {
  it('the first call answers nextcloud_auth without retry; every later one sends nothing', async () => {
    const ticket = await uploadTicket('auth');
    const read = await readTicket();
    rig.fake.reset();
    rig.fake.faults.status = 401;
    try {
      const first = await callTool(agent, 'list', { instance: 'personal', path: 'F' });
      expect(first).toMatchObject({ status: 'error', code: 'nextcloud_auth', retry: false });
      expect(rig.fake.requests).toHaveLength(1);
      // Even once Nextcloud would accept again, the broker does not try the password again.
      rig.fake.faults.status = null;
      const later = await everyOperation('auth', ticket, read);
      for (const [op, env] of later) {
        expect(env, op).toMatchObject({ status: 'error', code: 'nextcloud_auth', retry: false });
        expect(String(env.hint), op).toMatch(/owner/);
      }
      expect(rig.fake.requests).toHaveLength(1);
    } finally {
      rig.fake.reset();
    }
  });
});
