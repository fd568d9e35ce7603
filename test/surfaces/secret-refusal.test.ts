/**
 * Attacks that plant a configured secret in a tool argument, raw or encoded: the call is
 * refused at the MCP endpoint before anything is recorded, shown to the owner (console or
 * Matrix) or sent to Nextcloud, naming the field and never the value; the audit line
 * says a secret was refused in that field. A literal `[redacted]` is not a secret.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { assemble } from '../../broker/assemble.js';
import { startFakeNextcloud, type FakeNextcloud } from '../../fakes/nextcloud.js';
import { SUMMARY_WINDOW_MS } from '../../broker/operations/refusal-ledger.js';
import { startBrokerOn, startMatrixBroker, type BrokerOn, ROOM } from '../../support/daemon.js';
import { call, connectMcp } from '../../support/mcp.js';
import { AGENT_TOKEN, TRANSFER_TOKEN } from '../../support/tokens.js';

/** A password whose URL-encoded and base64 spellings differ from its raw form. */
const PASSWORD = 'p@ss/w0rd+with spaces&=?#ünï-8d2f';

let fake: FakeNextcloud;
let broker: BrokerOn;
let agent: Client;
let transfer: Client;

beforeAll(async () => {
  fake = await startFakeNextcloud({ password: PASSWORD });
  // The property below makes hundreds of refused calls: a refusal budget that never runs
  // out, so each is answered as itself (flood.test.ts covers the budget).
  broker = await startBrokerOn(
    { url: fake.url, user: fake.user, password: PASSWORD },
    { refusalBudget: { burst: 100_000, perSecond: 1 } },
    () => fake.close(),
  );
  agent = await broker.agent();
  transfer = await broker.transfer();
  await fake.mkdir('Docs');
  await broker.grant([{ path: 'Docs', mode: 'write' }]);
});
afterAll(async () => {
  await broker.close();
});

const b64 = (s: string): string => Buffer.from(s, 'utf8').toString('base64');

/** Everything the broker has said or recorded so far, as one text. */
function outputs(): string {
  return [
    ...broker.logger.lines,
    JSON.stringify(broker.auditLines()),
    JSON.stringify(broker.gateway.posted),
    JSON.stringify(broker.gateway.announcements),
  ].join('\n');
}

async function refusedFor(
  client: Client,
  tool: string,
  args: Record<string, unknown>,
  field: string,
  planted: string,
) {
  const posted = broker.gateway.posted.length;
  const pending = broker.store.pendingRequests().length;
  const sent = fake.requests.length;
  // A refusal like an earlier one within its summary window is counted, not written
  // again (refusal-ledger.ts): move past the window so this call gets its own line.
  broker.clock.offset += SUMMARY_WINDOW_MS;
  const result = await client.callTool({ name: tool, arguments: args });
  expect(result.isError).toBe(true);
  expect(result.structuredContent).toMatchObject({
    status: 'refused',
    code: 'secret_in_arguments',
    field,
  });
  const text = JSON.stringify(result);
  expect((result.structuredContent as { message: string }).message).toContain(field);
  for (const where of [text, outputs()]) expect(where).not.toContain(planted);
  expect(broker.gateway.posted.length).toBe(posted);
  expect(broker.store.pendingRequests().length).toBe(pending);
  expect(fake.requests.length).toBe(sent);
  // The last line of this call (the sweep may have written a summary of earlier ones).
  const line = broker
    .auditLines()
    .filter((l) => l.event !== 'refused_summary')
    .at(-1);
  expect(line).toMatchObject({ event: 'refused', code: 'secret_in_arguments', field, tool });
  expect(line?.path).toBeUndefined();
  expect(line?.reason).toBeUndefined();
}

describe('a secret planted in an argument is refused before anything happens', () => {
  it('the agent token in a request_access reason: not stored, not posted to the owner', async () => {
    const reason = `please approve, the token is ${AGENT_TOKEN}`;
    await refusedFor(
      agent,
      'request_access',
      { instance: 'personal', reason, items: [{ path: 'Docs', mode: 'read' }] },
      'reason',
      AGENT_TOKEN,
    );
  });

  it('a base64 of the Nextcloud password in a path: Nextcloud never receives it', async () => {
    const planted = b64(PASSWORD);
    await refusedFor(
      agent,
      'request_access',
      {
        instance: 'personal',
        reason: 'read two files',
        items: [
          { path: 'Docs/a', mode: 'read' },
          { path: `Docs/${planted}`, mode: 'read' },
        ],
      },
      'items[1].path',
      planted,
    );
    await refusedFor(
      agent,
      'list',
      { instance: 'personal', path: `Docs/${planted}` },
      'path',
      planted,
    );
  });

  it('a URL-encoded password and token in a cursor', async () => {
    for (const secret of [PASSWORD, TRANSFER_TOKEN]) {
      const planted = encodeURIComponent(secret);
      await refusedFor(
        agent,
        'list',
        { instance: 'personal', path: 'Docs', cursor: `c=${planted}` },
        'cursor',
        planted,
      );
    }
  });

  it('user:password as an HTTP Basic credential in a move target, on the agent surface', async () => {
    const planted = b64(`${fake.user}:${PASSWORD}`);
    await refusedFor(
      agent,
      'move',
      { instance: 'personal', from: 'Docs/a', to: `Docs/${planted}` },
      'to',
      planted,
    );
  });

  it('the transfer token in a path on the transfer surface, and in an instance name', async () => {
    await refusedFor(
      transfer,
      'read',
      { instance: 'personal', path: `Docs/${TRANSFER_TOKEN}` },
      'path',
      TRANSFER_TOKEN,
    );
    await refusedFor(
      agent,
      'list',
      { instance: AGENT_TOKEN, path: 'Docs' },
      'instance',
      AGENT_TOKEN,
    );
  });
});

/** Spellings an agent can write a secret in by hand, beyond the scrubber's encodings. */
const reshaped = (s: string): Record<string, string> => ({
  hex: Buffer.from(s).toString('hex'),
  'upper-case hex': Buffer.from(s).toString('hex').toUpperCase(),
  'upper case': s.toUpperCase(),
  reversed: [...s].reverse().join(''),
  'split by spaces': [...s].join(' '),
  'hex split by spaces': (Buffer.from(s).toString('hex').match(/../g) ?? []).join(' '),
});

describe('a secret in hex, upper case, reversed or split by spaces', () => {
  it('each spelling of the password and the agent token in a reason is refused', async () => {
    for (const secret of [PASSWORD, AGENT_TOKEN]) {
      for (const planted of Object.values(reshaped(secret))) {
        await refusedFor(
          agent,
          'request_access',
          {
            instance: 'personal',
            reason: `note: ${planted} (end)`,
            items: [{ path: 'Docs', mode: 'read' }],
          },
          'reason',
          planted,
        );
      }
    }
  });
});

describe('scrubbing is the last line, not a disguise', () => {
  it('the literal "Docs/[redacted]" is no secret: it is listed, and reaches Nextcloud as itself', async () => {
    await fake.mkdir('Docs/[redacted]');
    const sent = fake.requests.length;
    const answer = await call(agent, 'list', { instance: 'personal', path: 'Docs/[redacted]' });
    expect(answer).toMatchObject({ status: 'ok', path: 'Docs/[redacted]' });
    const paths = fake.requests.slice(sent).map((r) => decodeURIComponent(r.path));
    expect(paths.some((p) => p.endsWith('/Docs/[redacted]'))).toBe(true);
  });

  it('the audit lines of Docs/<token> and the literal Docs/[redacted] differ', async () => {
    // The same refusal earlier in this file is counted, not written again, within its
    // summary window (refusal-ledger.ts): move past it so this one gets its own line.
    broker.clock.offset += SUMMARY_WINDOW_MS;
    await call(agent, 'list', { instance: 'personal', path: `Docs/${AGENT_TOKEN}` });
    const tokenLine = broker.auditLines().at(-1);
    await call(agent, 'list', { instance: 'personal', path: 'Docs/[redacted]' });
    const literal = broker
      .auditLines()
      .filter((l) => l.event === 'intent')
      .at(-1);
    expect(tokenLine).toMatchObject({
      event: 'refused',
      code: 'secret_in_arguments',
      field: 'path',
    });
    expect(tokenLine?.path).toBeUndefined();
    expect(literal).toMatchObject({ event: 'intent', path: 'Docs/[redacted]' });
  });
});

describe('the approval channels never see a planted secret', () => {
  it('Matrix: the bot token in a reason is refused; nothing is posted to the room', async () => {
    const matrix = await startMatrixBroker();
    try {
      const a = await matrix.agent();
      const botToken = matrix.config.matrix?.bot_token as string;
      const before = matrix.hs.timeline(ROOM).length;
      const answer = await call(a, 'request_access', {
        instance: 'personal',
        reason: `token ${botToken}`,
        items: [{ path: 'Docs', mode: 'read' }],
      });
      expect(answer).toMatchObject({ code: 'secret_in_arguments', field: 'reason' });
      expect(matrix.hs.timeline(ROOM).length).toBe(before);
      expect(JSON.stringify(matrix.hs.timeline(ROOM))).not.toContain(botToken);
    } finally {
      await matrix.close();
    }
  });

  it('console: a planted password never reaches the owner’s terminal', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'broker-console-'));
    const output = new PassThrough();
    let shown = '';
    output.on('data', (c: Buffer) => (shown += c.toString()));
    const daemon = await assemble(
      { ...broker.config, approval: 'console', data_dir: dir },
      {
        writeLog: () => undefined,
        grantsFile: ':memory:',
        console: { input: new PassThrough(), output },
      },
    );
    try {
      const { url } = await daemon.start();
      const a = await connectMcp(`${url}/mcp`, AGENT_TOKEN);
      const planted = encodeURIComponent(PASSWORD);
      const answer = await call(a, 'request_access', {
        instance: 'personal',
        reason: 'a fine reason',
        items: [{ path: `Docs/${planted}`, mode: 'read' }],
      });
      expect(answer).toMatchObject({ code: 'secret_in_arguments', field: 'items[0].path' });
      // The same request without the secret does reach the console (the channel works).
      await call(a, 'request_access', {
        instance: 'personal',
        reason: 'a fine reason',
        items: [{ path: 'Docs/visible', mode: 'read' }],
      });
      await a.close();
      expect(shown).toContain('Docs/visible');
      expect(shown).not.toContain(planted);
      expect(shown).not.toContain(PASSWORD);
    } finally {
      await daemon.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('property: any string embedding a secret in any form is refused, and leaks nowhere', () => {
  const secrets = [AGENT_TOKEN, TRANSFER_TOKEN, PASSWORD];
  const forms: ((s: string, pre: string, post: string) => string)[] = [
    (s, pre, post) => `${pre}${s}${post}`,
    (s, pre, post) => `${pre}${encodeURIComponent(s)}${post}`,
    (s, pre, post) =>
      `${pre}${encodeURIComponent(s).replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase())}${post}`,
    (s, pre, post) => `${pre}${b64(s)}${post}`,
    (s, pre, post) => `${pre}${Buffer.from(s).toString('base64url')}${post}`,
    (s, pre, post) => b64(`${pre}${s}${post}`),
    (s, pre, post) => `${pre}${b64(`${fake.user}:${s}`)}${post}`,
    (s, pre, post) => `${pre}${JSON.stringify(s).slice(1, -1)}${post}`,
    ...Object.keys(reshaped('')).map(
      (how) => (s: string, pre: string, post: string) => `${pre}${reshaped(s)[how]}${post}`,
    ),
  ];
  const placements: ((planted: string) => [Client, string, Record<string, unknown>, string])[] = [
    (p) => [
      agent,
      'request_access',
      { instance: 'personal', reason: p, items: [{ path: 'Docs', mode: 'read' }] },
      'reason',
    ],
    (p) => [
      agent,
      'request_access',
      {
        instance: 'personal',
        reason: 'r',
        items: [
          { path: 'Docs', mode: 'read' },
          { path: p, mode: 'write' },
        ],
      },
      'items[1].path',
    ],
    (p) => [agent, 'list', { instance: 'personal', path: 'Docs', cursor: p }, 'cursor'],
    (p) => [agent, 'list', { instance: p, path: 'Docs' }, 'instance'],
    (p) => [agent, 'move', { instance: 'personal', from: p, to: 'Docs/b' }, 'from'],
    (p) => [agent, 'check_access', { request: 1, note: p }, 'note'],
    (p) => [
      transfer,
      'write',
      { instance: 'personal', path: 'Docs/x', size: 1, if_match: p },
      'if_match',
    ],
  ];
  const text = fc.string({ maxLength: 12 });

  it('is refused naming the field; no answer, log, audit line or owner message holds it', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...secrets),
        fc.integer({ min: 0, max: forms.length - 1 }),
        fc.integer({ min: 0, max: placements.length - 1 }),
        text,
        text,
        async (secret, form, place, pre, post) => {
          const planted = (forms[form] as (typeof forms)[number])(secret, pre, post);
          const [client, tool, args, field] = (placements[place] as (typeof placements)[number])(
            planted,
          );
          const result = await client.callTool({ name: tool, arguments: args });
          expect(result.isError).toBe(true);
          expect(result.structuredContent).toMatchObject({ code: 'secret_in_arguments', field });
          const said = JSON.stringify(result) + outputs();
          expect(said).not.toContain(secret);
          expect(said).not.toContain(planted);
        },
      ),
      { numRuns: 120 },
    );
  });
});
