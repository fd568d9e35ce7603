/**
 * Every error the broker and its CLI throw is a CodedError (broker/base/coded-error.ts):
 * one base, a literal `name`, a typed `code`, the `cause` kept. The CLI's exit code is its
 * error's code looked up once (docs/contracts.md §6).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ApprovalUnavailableError } from '../../broker/approval/gateway.js';
import { MatrixGatewayError } from '../../broker/approval/matrix/errors.js';
import { OwnerSocketError } from '../../broker/approval/owner/safety.js';
import { AuditError } from '../../broker/audit/errors.js';
import { CodedError } from '../../broker/base/coded-error.js';
import { PrivateModeError } from '../../broker/base/private-files.js';
import { ConfigError } from '../../broker/config/errors.js';
import { DemoRunningError } from '../../broker/demo/demo-lock.js';
import { MatrixCallError } from '../../broker/doctor/matrix-client.js';
import { GrantStoreError } from '../../broker/grants/rows.js';
import { ContentLineError } from '../../broker/nextcloud/content-lines.js';
import { NextcloudError } from '../../broker/nextcloud/errors.js';
import { TransportError } from '../../broker/nextcloud/http.js';
import { XmlError } from '../../broker/nextcloud/xml.js';
import { refused } from '../../broker/base/envelope.js';
import { GrantEndedError } from '../../broker/operations/in-flight.js';
import { OperationRefusal } from '../../broker/operations/step.js';
import type { ExitCode } from '../../cli/command.js';
import { CliError, type CliErrorCode } from '../../cli/client/transfer/errors.js';
import { McpCallError } from '../../cli/client/transfer/mcp-http.js';
import { ROOT } from '../../support/processes.js';

const cause = new Error('underneath');

describe('every error class has one base, a literal name and a typed code', () => {
  it.each([
    [new MatrixCallError('HTTP 403', 403, 'M_FORBIDDEN'), 'MatrixCallError', 'http'],
    [new MatrixCallError('ECONNREFUSED'), 'MatrixCallError', 'unreachable'],
    [new GrantStoreError('corrupt', 'damaged'), 'GrantStoreError', 'corrupt'],
    [ConfigError.single('invalid', 'instances', 'bad'), 'ConfigError', 'invalid'],
    [new ContentLineError('a bad line'), 'ContentLineError', 'malformed'],
    [new TransportError('network', 'ECONNRESET', true), 'TransportError', 'network'],
    [new XmlError('unclosed'), 'XmlError', 'malformed'],
    [new NextcloudError('not_found', 'gone'), 'NextcloudError', 'not_found'],
    [new AuditError('locked', 'held', { seq: 3 }), 'AuditError', 'locked'],
    [new GrantEndedError([1], { state: 'revoked', at: 0 }), 'GrantEndedError', 'grant_revoked'],
    [new GrantEndedError([1], { state: 'expired', at: 0 }), 'GrantEndedError', 'grant_expired'],
    [new OperationRefusal(refused('not_a_file', 'a folder')), 'OperationRefusal', 'not_a_file'],
    [new PrivateModeError('mode 755'), 'PrivateModeError', 'not_private'],
    [new DemoRunningError('running'), 'DemoRunningError', 'demo_running'],
    [new OwnerSocketError('no_broker', 'none', 'start it'), 'OwnerSocketError', 'no_broker'],
    [new ApprovalUnavailableError('stopped', 'down'), 'ApprovalUnavailableError', 'stopped'],
    [new MatrixGatewayError('encrypted', 'e2e'), 'MatrixGatewayError', 'encrypted'],
    [new McpCallError({ kind: 'http', status: 502 }), 'McpCallError', 'http'],
    [new CliError('clobber', 'exists', 'fetch first'), 'CliError', 'clobber'],
  ])('%s', (error, name, code) => {
    expect(error).toBeInstanceOf(CodedError);
    expect(error.name).toBe(name);
    expect(error.code).toBe(code);
  });

  it('keeps the cause it is given', () => {
    expect(new AuditError('write_failed', 'fsync failed', { cause }).cause).toBe(cause);
    expect(new MatrixGatewayError('bad_response', 'no', { cause }).cause).toBe(cause);
    expect(new GrantStoreError('schema', 'old', { cause }).cause).toBe(cause);
    expect(new AuditError('closed', 'closed')).not.toHaveProperty('cause');
  });

  it('no class in broker/ or cli/ extends Error but the base', () => {
    const direct: string[] = [];
    const walk = (dir: string): void => {
      for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
        const path = `${dir}/${entry.name}`;
        if (entry.isDirectory()) walk(path);
        else if (path.endsWith('.ts') && path !== 'broker/base/coded-error.ts') {
          const text = readFileSync(join(ROOT, path), 'utf8');
          if (/\bextends\s+Error\b/.test(text)) direct.push(path);
        }
      }
    };
    walk('broker');
    walk('cli');
    expect(direct).toEqual([]);
  });
});

describe("a CLI failure's exit code is its code's (docs/contracts.md §6)", () => {
  it.each<[CliErrorCode, ExitCode]>([
    ['usage', 1],
    ['infrastructure', 2],
    ['refused', 3],
    ['verification', 4],
    ['clobber', 5],
  ])('%s exits %i', (code, exit) => {
    expect(new CliError(code, 'failed', 'next').exitCode).toBe(exit);
  });
});
