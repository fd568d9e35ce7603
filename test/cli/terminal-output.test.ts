/**
 * Terminal injection attack: a broker (or whatever BROKER_URL points at) answers with
 * escape sequences, carriage returns or bidi overrides in its message. The CLI's human
 * text on stderr must show them as visible escapes, and its JSON stays parseable with
 * the message intact.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExitCode } from '../../cli/command.js';
import fc from 'fast-check';
import { forTerminal, jsonLine } from '../../cli/terminal.js';
import { runCli } from '../../support/processes.js';

const HOSTILE = 'no grant for \x1b[2J\x1b[1;1Hreport\r\u202Efdp.exe\u200B\u2028done';

let server: Server;
let url: string;
beforeAll(async () => {
  // Speaks just enough MCP (JSON answers) to refuse every tool call with HOSTILE.
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => {
      const msg = JSON.parse(body) as { id?: number; method: string };
      if (msg.id === undefined) {
        res.writeHead(202).end();
        return;
      }
      const result =
        msg.method === 'initialize'
          ? {
              protocolVersion: '2025-06-18',
              capabilities: {},
              serverInfo: { name: 'x', version: '0' },
            }
          : {
              content: [],
              structuredContent: { status: 'refused', code: 'no_grant', message: HOSTILE },
            };
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result }));
    });
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise<void>((done) => server.close(() => done()));
});

describe('terminal injection through a broker message', () => {
  it('stderr shows control, format and separator characters as visible escapes', async () => {
    const stage = mkdtempSync(join(tmpdir(), 'broker-cli-tty-'));
    const run = await runCli(['fetch', 'personal:Docs/report.pdf'], {
      BROKER_URL: url,
      BROKER_TRANSFER_TOKEN: 'test-transfer-token-0123456789abcdef',
      BROKER_STAGE_DIR: stage,
    });
    expect(run.code).toBe(ExitCode.refused);
    expect(run.json.error).toBe(`refused: ${HOSTILE}`);
    for (const raw of ['\x1b', '\r', '\u202E', '\u200B', '\u2028']) {
      expect(run.stderr.includes(raw)).toBe(false);
      expect(run.stdout.includes(raw)).toBe(false);
    }
    expect(run.stderr).toContain(
      '\\u{1B}[2J\\u{1B}[1;1Hreport\\u{D}\\u{202E}fdp.exe\\u{200B}\\u{2028}done',
    );
  });

  it('forTerminal keeps ordinary non-ASCII names as they are', () => {
    expect(forTerminal('Übersicht – 報告 🚀.odt')).toBe('Übersicht – 報告 🚀.odt');
    expect(forTerminal('a\tb\nc')).toBe('a\\u{9}b\\u{A}c');
  });

  it('jsonLine parses back to the same value and holds no raw control, format or separator character', () => {
    const dangerous = /[\p{Cc}\p{Cf}\u2028\u2029]/u;
    fc.assert(
      fc.property(
        fc.dictionary(fc.string({ unit: 'binary' }), fc.string({ unit: 'binary' })),
        (value) => {
          const line = jsonLine(value);
          expect(line.endsWith('\n')).toBe(true);
          expect(dangerous.test(line.slice(0, -1))).toBe(false);
          expect(JSON.parse(line)).toEqual(value);
        },
      ),
      { numRuns: 500 },
    );
  });
});
