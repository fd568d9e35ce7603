/**
 * Issue 14.7 as it was found: the agent sends paths with a bidi override, line
 * separators, NEL, a CSI and DEL; the broker refuses them, and the audit lines on disk
 * carry them as `\uXXXX`, one line per record, printable ASCII only.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyAudit } from '../../broker/audit/index.js';
import { startBroker, type Broker } from '../../support/daemon.js';
import { call } from '../../support/mcp.js';

let broker: Broker;
beforeAll(async () => {
  broker = await startBroker();
});
afterAll(async () => {
  await broker.close();
});

const PATHS = [
  'Docs2/\u202Efdp.txt',
  'Docs/a\u2028b',
  'Docs/a\u2029b',
  'Docs/a\u0085b',
  'Docs/a\u009B2Jb',
  'Docs/a\u007Fb',
];

describe('attack: an agent path that would reorder or split the audit log for a reader', () => {
  it('is refused, and the log on disk is printable ASCII with one line per record', async () => {
    const agent = await broker.agent();
    for (const path of PATHS) {
      const answer = await call(agent, 'list', { instance: 'personal', path });
      expect(answer.status).toBe('refused');
    }
    const text = readFileSync(join(broker.dir, 'audit.log'), 'latin1');
    const lines = text.replace(/\n$/, '').split('\n');
    for (const line of lines) expect(line).toMatch(/^[\x20-\x7e]+$/);
    // Every reader's notion of a line (U+2028/9, NEL, CR, VT, FF too) finds the same lines.
    expect(text.replace(/\n$/, '').split(/\r\n|[\n\r\v\f\u0085\u2028\u2029]/)).toHaveLength(
      lines.length,
    );
    expect(text).toContain('"path":"Docs2/\\u202efdp.txt"');
    const refusedPaths = broker
      .auditLines()
      .filter((l) => l.event === 'refused' && l.tool === 'list')
      .map((l) => l.path);
    expect(refusedPaths).toEqual(PATHS);
    expect(verifyAudit(broker.dir)).toMatchObject({ ok: true });
  });
});
