/**
 * A revoke during a large transfer, on the real server: the `broker` CLI (a subprocess)
 * exits 3 with the code the broker audited, never 2 ("retry later"), and leaves nothing
 * behind. The broker reaches Nextcloud through a gate that stalls the bytes half-way, so
 * the revoke lands while they move.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ExitCode } from '../../cli/command.js';
import { whileHeld, type GateProxy } from '../../support/gate-proxy.js';
import { useRealRig } from './rig.js';

const rig = useRealRig({}, { gate: true });
const MiB = 1024 * 1024;
const SIZE = 48 * MiB;

const gateOf = (): GateProxy => {
  if (rig.gate === undefined) throw new Error('the rig was built without its gate');
  return rig.gate;
};

const lastOutcome = (tool: string) =>
  rig.broker
    .auditLines()
    .filter((l) => l.tool === tool && l.event === 'outcome')
    .at(-1);

describe('a revoke during a large fetch', () => {
  it('exits 3 with the code, and the staging folder stays empty', async () => {
    await rig.owner.writeFile('Cut/large.bin', randomBytes(SIZE));
    const id = await rig.broker.grant([{ path: 'Cut', mode: 'read' }]);
    const stage = rig.stage();
    const result = await whileHeld(
      gateOf(),
      'down',
      2 * MiB,
      () => rig.cli(['fetch', 'personal:Cut/large.bin'], stage),
      () => rig.broker.gateway.decide(`revoke ${id}`),
    );
    expect(result.code).toBe(ExitCode.refused);
    const audited = lastOutcome('blob_get');
    expect(audited).toMatchObject({ outcome: 'refused' });
    expect(result.json).toMatchObject({ status: 'failed', code: audited?.code });
    expect(readdirSync(stage)).toEqual([]);
    expect(existsSync(`${stage}.state`)).toBe(false);
  });
});

describe('a revoke during a large push', () => {
  it('exits 3 with the code, and Nextcloud holds no file', async () => {
    await rig.owner.mkdirs('CutUp');
    const id = await rig.broker.grant([{ path: 'CutUp', mode: 'write' }]);
    const stage = rig.stage();
    const src = join(stage, 'up.bin');
    writeFileSync(src, randomBytes(SIZE));
    const result = await whileHeld(
      gateOf(),
      'up',
      2 * MiB,
      () => rig.cli(['push', 'personal:CutUp/up.bin', src], stage),
      () => rig.broker.gateway.decide(`revoke ${id}`),
    );
    expect(result.code).toBe(ExitCode.refused);
    expect(result.json).toMatchObject({ status: 'failed', code: lastOutcome('blob_put')?.code });
    expect(await rig.owner.exists('CutUp/up.bin')).toBe(false);
  });
});
