/**
 * The paired devices at rest (broker/approval/pairing/pin-file.ts), attack-named: the
 * file decides whose words approve access, so it is read and written only as the
 * broker's own regular 0600 file, never through a symbolic link someone planted.
 */
import {
  chmodSync,
  chownSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  PINS_FILE,
  PinFileError,
  readPinFile,
  writePinFile,
} from '../../broker/approval/pairing/pin-file.js';

const KEY = '3sbpG34KF2+42DHWuubqkFUbSzrHuCawDWjFmSc5g5k';
const PIN = { deviceId: 'PHONEDEVICE', ed25519: KEY, pairedAt: Date.UTC(2026, 0, 2) };

let dir: string;
let elsewhere: string;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'pins-'));
  elsewhere = mkdtempSync(join(tmpdir(), 'pins-elsewhere-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
  rmSync(elsewhere, { recursive: true, force: true });
});

describe('the pin file', () => {
  it('is absent: no paired device', () => {
    expect(readPinFile(dir)).toEqual([]);
  });

  it('round-trips, 0600, whatever the umask', () => {
    const old = process.umask(0o000);
    try {
      writePinFile(dir, [PIN]);
    } finally {
      process.umask(old);
    }
    expect(statSync(join(dir, PINS_FILE)).mode & 0o777).toBe(0o600);
    expect(readPinFile(dir)).toEqual([PIN]);
    writePinFile(dir, []);
    expect(readPinFile(dir)).toEqual([]);
  });

  it('wider than 0600 (restored from a backup, say): narrowed when read', () => {
    writePinFile(dir, [PIN]);
    chmodSync(join(dir, PINS_FILE), 0o644);
    expect(readPinFile(dir)).toEqual([PIN]);
    expect(statSync(join(dir, PINS_FILE)).mode & 0o777).toBe(0o600);
  });
});

describe('attack: a symbolic link planted at the pin file', () => {
  it("pointing at a list of the attacker's devices: refused, never read", () => {
    const theirs = join(elsewhere, 'theirs.json');
    writePinFile(elsewhere, [{ ...PIN, deviceId: 'EVILDEVICE' }]);
    writeFileSync(theirs, readFileSync(join(elsewhere, PINS_FILE)));
    symlinkSync(theirs, join(dir, PINS_FILE));
    expect(() => readPinFile(dir)).toThrow(PinFileError);
    expect(() => readPinFile(dir)).toThrow(/symbolic link/);
  });

  it('pointing at a file elsewhere: a write replaces the link, and leaves the target as it was', () => {
    const target = join(elsewhere, 'precious');
    writeFileSync(target, 'keep me', { mode: 0o644 });
    symlinkSync(target, join(dir, PINS_FILE));
    writePinFile(dir, [PIN]);
    expect(readFileSync(target, 'utf8')).toBe('keep me');
    expect(statSync(target).mode & 0o777).toBe(0o644);
    expect(lstatSync(join(dir, PINS_FILE)).isSymbolicLink()).toBe(false);
    expect(readPinFile(dir)).toEqual([PIN]);
  });

  it('at the temporary file: the write goes to a new file, never through the link', () => {
    const target = join(elsewhere, 'precious');
    writeFileSync(target, 'keep me');
    symlinkSync(target, join(dir, `${PINS_FILE}.tmp`));
    writePinFile(dir, [PIN]);
    expect(readFileSync(target, 'utf8')).toBe('keep me');
    expect(readPinFile(dir)).toEqual([PIN]);
  });

  it('a folder in its place: refused', () => {
    mkdirSync(join(dir, PINS_FILE));
    expect(() => readPinFile(dir)).toThrow(/not a regular file/);
  });
});

describe("attack: another user's pin file", () => {
  it('is refused, naming its owner', () => {
    writePinFile(dir, [PIN]);
    const path = join(dir, PINS_FILE);
    const me = process.getuid?.() ?? 0;
    if (me === 0) chownSync(path, 4242, 4242);
    // Not root: the file is ours, so ask as if the broker ran as another user.
    const uid = me === 0 ? 0 : me + 1;
    expect(() => readPinFile(dir, uid)).toThrow(/belongs to uid/);
  });
});

describe('a pin file that is not what the broker writes', () => {
  it.each([
    ['not JSON', 'pins!'],
    ['another version', JSON.stringify({ v: 2, pins: [] })],
    [
      'a key that is not one',
      JSON.stringify({
        v: 1,
        pins: [{ device_id: 'A', ed25519: 'short', paired_at: '2026-01-02T00:00:00.000Z' }],
      }),
    ],
    ['an unknown field', JSON.stringify({ v: 1, pins: [], more: true })],
  ])('%s: refused, never guessed at', (_what, text) => {
    writeFileSync(join(dir, PINS_FILE), text, { mode: 0o600 });
    expect(() => readPinFile(dir)).toThrow(/not a list of paired devices/);
  });

  it('an existing link stays what it points to when the read is refused', () => {
    symlinkSync('/etc/passwd', join(dir, PINS_FILE));
    expect(() => readPinFile(dir)).toThrow(PinFileError);
    expect(readlinkSync(join(dir, PINS_FILE))).toBe('/etc/passwd');
  });
});
