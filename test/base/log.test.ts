import { describe, expect, it } from 'vitest';
import { createLogger } from '../../broker/base/log.js';

describe('logger', () => {
  it('scrubs the whole serialised line, fields included', () => {
    const lines: string[] = [];
    const log = createLogger({
      level: 'info',
      scrub: (t) => t.replaceAll('s3cret', '[redacted]'),
      write: (l) => lines.push(l),
      now: () => Date.UTC(2026, 0, 1),
    });
    log.info('token s3cret in message', { detail: 'and s3cret in a field' });
    expect(lines).toHaveLength(1);
    expect(lines[0]).not.toContain('s3cret');
    const parsed = JSON.parse(lines[0] ?? '') as Record<string, unknown>;
    expect(parsed).toMatchObject({
      ts: '2026-01-01T00:00:00.000Z',
      level: 'info',
      msg: 'token [redacted] in message',
      detail: 'and [redacted] in a field',
    });
  });

  it('drops lines below the configured level', () => {
    const lines: string[] = [];
    const log = createLogger({
      level: 'warn',
      scrub: (t) => t,
      write: (l) => lines.push(l),
      now: () => 0,
    });
    log.debug('d');
    log.info('i');
    log.warn('w');
    log.error('e');
    expect(lines.map((l) => (JSON.parse(l) as { msg: string }).msg)).toEqual(['w', 'e']);
  });

  it('still writes a line when a field cannot be serialised', () => {
    const lines: string[] = [];
    const log = createLogger({
      level: 'info',
      scrub: (t) => t,
      write: (l) => lines.push(l),
      now: () => 0,
    });
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    log.error('boom', { cyclic });
    expect(JSON.parse(lines[0] ?? '')).toMatchObject({ level: 'error', msg: 'boom' });
  });
});
