/**
 * A checkout lock never outlives its grant, on the real server: not across a restart of
 * the broker, not when Nextcloud is down at the moment of the revoke, and a LOCK that
 * Nextcloud answers over the owner's own user lock hands out nothing. Checked where it
 * matters: the owner's own client can write the file again.
 */
import { describe, expect, it } from 'vitest';
import { call } from '../../support/mcp.js';
import { until } from '../../support/until.js';
import { useRealRig } from './rig.js';

// The sweep on a short timer: the retries after Nextcloud comes back run on real time.
const rig = useRealRig({ persist: true, sweepIntervalMs: 1_000 });

/** A checked-out file in `folder`, under a write grant; returns the lock token. */
async function checkedOut(folder: string): Promise<string> {
  await rig.owner.writeFile(`${folder}/doc.txt`, 'v1');
  await rig.broker.grant([{ path: folder, mode: 'write' }]);
  const out = await call(rig.transfer, 'checkout', {
    instance: 'personal',
    path: `${folder}/doc.txt`,
  });
  expect(out.status).toBe('ok');
  expect(await rig.owner.locked(`${folder}/doc.txt`)).toBe(true);
  expect((await rig.owner.put(`${folder}/doc.txt`, 'the owner')).status).toBe(423);
  return out.lock_token as string;
}

const releases = () =>
  rig.broker.auditLines().filter((l) => l.tool === 'release_lock' && l.event === 'outcome');

describe('attack: restart the broker to keep a checkout lock past its grant', () => {
  it('checkout, restart, revoke all: the owner writes the file again (no 423)', async () => {
    const token = await checkedOut('Restart');
    await rig.restart();
    const status = await rig.broker.gateway.decide('status');
    expect(status?.text).toContain('`Restart/doc.txt`');
    await rig.broker.gateway.decide('revoke all');
    expect(await rig.owner.locked('Restart/doc.txt')).toBe(false);
    expect((await rig.owner.put('Restart/doc.txt', 'the owner again')).status).toBe(204);
    expect((await rig.owner.del('Restart/doc.txt')).status).toBe(204);
    expect(rig.broker.store.checkoutLocks.byToken(token)?.state).toBe('released');
    expect(releases().at(-1)).toMatchObject({ outcome: 'ok', released: 'unlocked' });
  });
});

describe('attack: revoke while Nextcloud is down', () => {
  it('the release is retried until it lands: the lock is gone within a minute of Nextcloud coming back', async () => {
    const token = await checkedOut('Outage');
    await rig.server.stop();
    try {
      await rig.broker.gateway.decide('revoke all');
      expect(rig.broker.store.checkoutLocks.byToken(token)?.state).toBe('releasing');
      expect(releases().at(-1)).toMatchObject({ outcome: 'error', attempt: 1 });
    } finally {
      await rig.server.start();
    }
    const back = Date.now();
    await until(
      'the lock to be released',
      () => rig.broker.store.checkoutLocks.byToken(token)?.state === 'released',
      60_000,
      200,
    );
    expect(Date.now() - back).toBeLessThan(60_000);
    expect(await rig.owner.locked('Outage/doc.txt')).toBe(false);
    expect((await rig.owner.put('Outage/doc.txt', 'the owner again')).status).toBe(204);
    const tries = releases().filter((l) => l.lock === releases().at(-1)?.lock);
    expect(tries.at(-1)).toMatchObject({ outcome: 'ok' });
    expect(tries.map((l) => l.attempt)).toEqual(tries.map((_, i) => i + 1));
  });
});

describe('attack: a LOCK over the owner’s own user lock answers 200 and locks nothing', () => {
  it('checkout is refused, says the owner holds the file, and hands out nothing', async () => {
    await rig.owner.writeFile('UserLocked/doc.txt', 'v1');
    const userLock = await rig.owner.request('LOCK', rig.owner.target('UserLocked/doc.txt'), {
      'X-User-Lock': '1',
    });
    expect(userLock.status).toBe(200);
    await rig.broker.grant([{ path: 'UserLocked', mode: 'write' }]);
    const out = await call(rig.transfer, 'checkout', {
      instance: 'personal',
      path: 'UserLocked/doc.txt',
    });
    expect(out).toMatchObject({ status: 'refused', code: 'locked' });
    expect(String(out.message)).toContain('locked by its owner');
    expect(out.lock_token).toBeUndefined();
    expect(out.blob_url).toBeUndefined();
    expect(rig.broker.store.openCheckoutLocks()).toEqual([]);
    // Through the CLI: refused as held by someone else (exit 5), nothing staged.
    const stage = rig.stage();
    const cli = await rig.cli(['checkout', 'personal:UserLocked/doc.txt'], stage);
    expect(cli.code).toBe(5);
    expect(cli.stdout).toContain('locked by its owner');
    // The owner's own user lock is untouched: she still writes.
    expect((await rig.owner.put('UserLocked/doc.txt', 'the owner')).status).toBe(204);
  });
});
