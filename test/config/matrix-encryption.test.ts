/**
 * `matrix.encryption` and its companions (docs/contracts.md §7): an encrypted approval
 * room with decisions only from pinned devices, or clear text with a warning.
 */
import { describe, expect, it } from 'vitest';
import { parsePin } from '../../broker/config/resolve.js';
import { configError, ctx, parseRaw, validRaw, type Raw } from './helpers.js';

const KEY = '3sbpG34KF2+42DHWuubqkFUbSzrHuCawDWjFmSc5g5k';
const SECRET = 'crypto-secret-0123456789abcdef0123456789';

function encrypted(over: Record<string, unknown> = {}): Raw {
  const raw = validRaw();
  raw['matrix'] = {
    ...(raw['matrix'] as Record<string, unknown>),
    encryption: 'required',
    approver_devices: [`PHONEDEVICE ${KEY}`],
    crypto_secret_env: 'BROKER_MATRIX_CRYPTO_SECRET',
    ...over,
  };
  return raw;
}

const env = {
  BROKER_MATRIX_CRYPTO_SECRET: SECRET,
  BROKER_MATRIX_PASSWORD: 'a-long-bot-password-1',
};

describe('matrix.encryption: required', () => {
  it('reads the pins, the crypto secret and the optional bot password', () => {
    const { config, warnings } = parseRaw(
      encrypted({ bot_password_env: 'BROKER_MATRIX_PASSWORD' }),
      ctx({ env }),
    );
    expect(config.matrix?.encryption).toBe('required');
    expect(config.matrix?.approver_devices).toEqual([{ deviceId: 'PHONEDEVICE', ed25519: KEY }]);
    expect(config.matrix?.crypto_secret).toBe(SECRET);
    expect(config.matrix?.bot_password).toBe('a-long-bot-password-1');
    expect(warnings.join('\n')).not.toContain('matrix.encryption');
  });

  it('accepts a key written in the groups of four Element shows', () => {
    const grouped = KEY.match(/.{1,4}/g)?.join(' ') ?? '';
    expect(parsePin(`PHONEDEVICE ${grouped}`)).toEqual({ deviceId: 'PHONEDEVICE', ed25519: KEY });
  });

  it('takes a missing or empty approver_devices: devices are then paired with broker pair', () => {
    for (const devices of [undefined, []]) {
      const { config } = parseRaw(encrypted({ approver_devices: devices }), ctx({ env }));
      expect(config.matrix?.encryption).toBe('required');
      expect(config.matrix?.approver_devices).toEqual([]);
    }
  });

  it('still refuses approver_devices that is not a list, naming the key', () => {
    const e = configError(encrypted({ approver_devices: 'PHONEDEVICE' }), ctx({ env }));
    expect(e.message).toContain('matrix.approver_devices');
  });

  it('refuses a pin without a key, or with a key that is not 32 bytes of base64, naming the entry', () => {
    for (const line of ['PHONEDEVICE', `PHONEDEVICE ${KEY.slice(1)}`, `${KEY}`, 'A B C']) {
      const e = configError(encrypted({ approver_devices: [line] }), ctx({ env }));
      expect(e.message).toContain('matrix.approver_devices[0]');
    }
  });

  it('refuses a missing or short crypto secret, naming the key and never the value', () => {
    const missing = configError(encrypted({ crypto_secret_env: undefined }), ctx({ env }));
    expect(missing.message).toContain('matrix.crypto_secret');
    const short = configError(
      encrypted(),
      ctx({ env: { BROKER_MATRIX_CRYPTO_SECRET: 'too-short-secret-1234' } }),
    );
    expect(short.message).toContain('matrix.crypto_secret_env');
    expect(short.message).toContain('at least 32');
    expect(short.message).not.toContain('too-short-secret-1234');
  });

  it('refuses an unknown mode, naming matrix.encryption', () => {
    const e = configError(encrypted({ encryption: 'optional' }), ctx({ env }));
    expect(e.message).toContain('matrix.encryption');
    expect(e.message).toContain('required or off');
  });
});

describe('matrix.encryption: off (the default when absent)', () => {
  it('is off when absent, and ignores approver_devices then', () => {
    const { config } = parseRaw(validRaw(), ctx());
    expect(config.matrix?.encryption).toBe('off');
    expect(config.matrix?.approver_devices).toEqual([]);
  });
});
