/**
 * Next steps name things the reader has. The agent has the agent tools and the `broker`
 * CLI; it has no read tool and never sees the transfer tools' arguments (if_match,
 * if_none_match, lock tokens, tickets), so no answer may tell it to use one.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { startBroker, type Broker } from '../../support/daemon.js';
import { putBlob } from '../../support/blobs.js';
import { call } from '../../support/mcp.js';
import { TRANSFER_TOKEN } from '../../support/tokens.js';

let broker: Broker;
let agent: Client;
let transfer: Client;

beforeAll(async () => {
  broker = await startBroker();
  agent = await broker.agent();
  transfer = await broker.transfer();
  await broker.fake.writeFile('Ns/a.txt', 'a');
  await broker.grant([{ path: 'Ns', mode: 'write' }]);
});
afterAll(async () => {
  await broker.close();
});

/** What the reader is told: the message and the hint. */
const words = (answer: Record<string, unknown>): string =>
  `${String(answer.message)} ${String(answer.hint ?? '')}`;
const NOT_THE_READERS = /if_match|if_none_match|lock_token|call the tool|read it/;

/** A transfer `write` of one byte to `path` under `condition`. */
const write = (path: string, condition: Record<string, unknown>) =>
  call(transfer, 'write', { instance: 'personal', path, size: 1, ...condition });

describe('next steps name the broker CLI, never the transfer arguments', () => {
  it('creating over an existing file: fetch it first with `broker fetch`, not "if_match"', async () => {
    const answer = await write('Ns/a.txt', { if_none_match: '*' });
    expect(answer.code).toBe('conflict');
    expect(answer.hint).toContain('`broker fetch personal:Ns/a.txt` first');
    expect(words(answer)).not.toMatch(NOT_THE_READERS);
  });

  it('replacing a file changed since it was fetched: `broker fetch` it again, then `broker push`', async () => {
    const answer = await write('Ns/a.txt', { if_match: '"not-the-etag"' });
    expect(answer.code).toBe('conflict');
    expect(answer.hint).toContain('`broker fetch personal:Ns/a.txt` the current version');
    expect(answer.hint).toContain('`broker push`');
    expect(words(answer)).not.toMatch(NOT_THE_READERS);
  });

  it('replacing a file that is gone: push it to a new name (no if_none_match)', async () => {
    const answer = await write('Ns/gone.txt', { if_match: '"e"' });
    expect(answer.message).toContain('no longer exists');
    expect(answer.hint).toContain('`broker push` it to a new name');
    expect(words(answer)).not.toMatch(NOT_THE_READERS);
  });

  it('list on a file: there is no read tool, so it says `broker fetch INSTANCE:PATH`', async () => {
    const answer = await call(agent, 'list', { instance: 'personal', path: 'Ns/a.txt' });
    expect(answer).toMatchObject({ status: 'refused', code: 'not_a_folder' });
    expect(answer.hint).toContain('`broker fetch personal:Ns/a.txt`');
    expect(words(answer)).not.toMatch(NOT_THE_READERS);
  });

  it("another checkout's lock token: `broker checkin` uses the right one", async () => {
    await broker.fake.writeFile('Ns/b.txt', 'b');
    const a = await call(transfer, 'checkout', { instance: 'personal', path: 'Ns/a.txt' });
    const answer = await call(transfer, 'checkin', {
      instance: 'personal',
      path: 'Ns/b.txt',
      lock_token: a.lock_token,
      abandon: true,
    });
    expect(answer.code).toBe('lock_token_unknown');
    expect(answer.hint).toContain('`broker checkin personal:Ns/b.txt`');
    await call(transfer, 'checkin', {
      instance: 'personal',
      path: 'Ns/a.txt',
      lock_token: a.lock_token,
      abandon: true,
    });
  });

  it('a spent ticket: run the broker command again', async () => {
    const ticket = await write('Ns/new.txt', { if_none_match: '*' });
    await putBlob(broker.url, ticket.blob_url as string, TRANSFER_TOKEN, Buffer.from('x'));
    const again = await putBlob(
      broker.url,
      ticket.blob_url as string,
      TRANSFER_TOKEN,
      Buffer.from('x'),
    );
    expect(again.json).toMatchObject({ code: 'ticket_invalid' });
    expect(String((again.json as { message: string }).message)).toContain(
      'run the broker command again',
    );
  });

  it('an upload Nextcloud stored with other bytes: `broker push` it again', async () => {
    const ticket = await call(transfer, 'write', {
      instance: 'personal',
      path: 'Ns/flip.txt',
      size: 4,
      if_none_match: '*',
    });
    broker.fake.faults.xHash = 'wrong';
    broker.fake.faults.flipByte = true;
    try {
      const put = await putBlob(
        broker.url,
        ticket.blob_url as string,
        TRANSFER_TOKEN,
        Buffer.from('data'),
      );
      expect(put.json).toMatchObject({ code: 'verification_failed' });
      expect(String((put.json as { message: string }).message)).toContain('`broker push` it again');
    } finally {
      broker.fake.faults.xHash = 'honest';
      broker.fake.faults.flipByte = false;
    }
  });
});
