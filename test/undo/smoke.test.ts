import { afterEach, beforeEach, expect, it } from 'vitest';
import { nextSecond } from '../../fakes/nextcloud.js';
import { push, replace } from '../../support/agent-writes.js';
import { startBroker, type Broker } from '../../support/daemon.js';
import { call } from '../../support/mcp.js';

let broker: Broker;
beforeEach(async () => {
  broker = await startBroker();
});
afterEach(async () => {
  await broker.close();
});

it('smoke', async () => {
  await broker.fake.writeFile('D/a.txt', 'owner v0');
  await broker.fake.writeFile('D/t.txt', 'trash me');
  const id = await broker.grant([{ path: 'D', mode: 'write' }]);
  const transfer = await broker.transfer();
  const agent = await broker.agent();
  await nextSecond();
  await replace(broker.url, transfer, 'D/a.txt', 'agent v1');
  await push(broker.url, transfer, 'D/new.txt', 'agent new');
  expect(await call(agent, 'mkdir', { instance: 'personal', path: 'D/F' })).toMatchObject({
    status: 'ok',
  });
  expect(
    await call(agent, 'move', { instance: 'personal', from: 'D/new.txt', to: 'D/F/new.txt' }),
  ).toMatchObject({ status: 'ok' });
  expect(await call(agent, 'trash', { instance: 'personal', path: 'D/t.txt' })).toMatchObject({
    status: 'ok',
  });
  const dry = await broker.gateway.decide(`undo --request ${id} --dry-run`);
  console.log(dry?.text);
  const r = await broker.gateway.decide(`undo --request ${id}`);
  console.log(r?.text);
  console.log(
    JSON.stringify(
      broker
        .auditLines()
        .filter((l) => l.event === 'undo')
        .slice(-2),
    ),
  );
  expect((await broker.fake.readFile('D/a.txt'))?.toString()).toBe('owner v0');
  expect((await broker.fake.readFile('D/t.txt'))?.toString()).toBe('trash me');
  expect(await broker.fake.exists('D/F')).toBe(false);
  expect(await broker.fake.exists('D/new.txt')).toBe(false);
});
