/**
 * GET /metrics over a real socket against the assembled daemon: off without
 * tokens.metrics (404), 401 without or with a wrong token, and with it the Prometheus
 * text format carrying the counts of what the test did, and nothing of the paths, file
 * names, reasons or secrets those operations used.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { startBroker, type Broker } from '../../support/daemon.js';
import { call } from '../../support/mcp.js';
import { getBlob, putBlob } from '../../support/blobs.js';
import { AGENT_TOKEN, APP_PASSWORD, METRICS_TOKEN, TRANSFER_TOKEN } from '../../support/tokens.js';

/** Names the operations below use; none may appear in the metrics. */
const FOLDER = 'Quarterly-Zebra';
const FILE = 'payroll-orchid.bin';
const NEW_FILE = 'upload-mango.bin';
const DENIED = 'Secret-Walnut';
const REASON = 'reason-tangerine';

async function scrape(
  url: string,
  token?: string,
): Promise<{ status: number; type: string | null; text: string }> {
  const res = await fetch(`${url}/metrics`, {
    headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
  });
  return { status: res.status, type: res.headers.get('content-type'), text: await res.text() };
}

/** The sample value of `name{labels}` (labels in the registry's order), or undefined. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe('GET /metrics without tokens.metrics', () => {
  it('is off: 404 with or without a token', async () => {
    const broker = await startBroker();
    try {
      expect((await scrape(broker.url)).status).toBe(404);
      expect((await scrape(broker.url, METRICS_TOKEN)).status).toBe(404);
    } finally {
      await broker.close();
    }
  });
});

describe('GET /metrics with tokens.metrics', () => {
  let broker: Broker;
  let agent: Client;
  let transfer: Client;

  beforeAll(async () => {
    broker = await startBroker({ metrics: true });
    agent = await broker.agent();
    transfer = await broker.transfer();
    const content = randomBytes(4096);
    await broker.fake.writeFile(`${FOLDER}/${FILE}`, content);
    await broker.grant([{ path: FOLDER, mode: 'write' }]);
    // A download and an upload through the blob endpoint.
    const read = await call(transfer, 'read', { instance: 'personal', path: `${FOLDER}/${FILE}` });
    expect((await getBlob(broker.url, read.blob_url as string, TRANSFER_TOKEN)).status).toBe(200);
    const write = await call(transfer, 'write', {
      instance: 'personal',
      path: `${FOLDER}/${NEW_FILE}`,
      size: 1000,
      if_none_match: '*',
    });
    const put = await putBlob(
      broker.url,
      write.blob_url as string,
      TRANSFER_TOKEN,
      randomBytes(1000),
    );
    expect(put.status).toBe(200);
    // A refusal (no grant) and a request that stays pending, with a reason.
    expect(await call(agent, 'list', { instance: 'personal', path: DENIED })).toMatchObject({
      status: 'refused',
      code: 'no_grant',
    });
    expect(
      await call(agent, 'request_access', {
        instance: 'personal',
        reason: REASON,
        items: [{ path: DENIED, mode: 'read' }],
      }),
    ).toMatchObject({ status: 'pending' });
  });
  afterAll(async () => {
    await broker.close();
  });

  it('401 without a token, with a wrong one, and with the agent or transfer token', async () => {
    for (const token of [undefined, 'x'.repeat(40), AGENT_TOKEN, TRANSFER_TOKEN]) {
      const res = await scrape(broker.url, token);
      expect(res.status).toBe(401);
      expect(res.text).not.toContain('broker_');
    }
  });

  it('serves the Prometheus text format: HELP, TYPE and samples only', async () => {
    const res = await scrape(broker.url, METRICS_TOKEN);
    expect(res.status).toBe(200);
    expect(res.type).toMatch(/^text\/plain; version=0\.0\.4/);
    const lines = res.text.split('\n').filter((l) => l !== '');
    const sampleLine =
      /^[a-z_:][a-z0-9_:]*(\{[a-z_]+="[^"\\\n]*"(,[a-z_]+="[^"\\\n]*")*\})? -?[0-9.e+-]+|[+-]Inf|NaN$/i;
    for (const line of lines) {
      if (line.startsWith('# HELP ')) expect(line).toMatch(/^# HELP [a-z_]+ \S/);
      else if (line.startsWith('# TYPE ')) {
        expect(line).toMatch(/^# TYPE [a-z_]+ (counter|gauge|histogram)$/);
      } else expect(line, line).toMatch(sampleLine);
    }
    for (const name of [
      'broker_requests_total',
      'broker_refusals_total',
      'broker_pending_requests',
      'broker_active_grants',
      'broker_held_locks',
      'broker_audit_append_seconds',
      'broker_audit_fsync_seconds',
      'broker_transfer_bytes_total',
      'broker_nextcloud_request_seconds',
      'broker_approval_seconds',
    ]) {
      expect(lines).toContain(`# TYPE ${name} ${typeOf(name)}`);
    }
  });

  it('counts what the test did', async () => {
    const { text } = await scrape(broker.url, METRICS_TOKEN);
    expect(sample(text, 'broker_transfer_bytes_total{direction="download"}')).toBe(4096);
    expect(sample(text, 'broker_transfer_bytes_total{direction="upload"}')).toBe(1000);
    expect(
      sample(text, 'broker_requests_total{surface="transfer",tool="blob_get",status="ok"}'),
    ).toBe(1);
    expect(
      sample(text, 'broker_requests_total{surface="agent",tool="list",status="refused"}'),
    ).toBe(1);
    expect(sample(text, 'broker_refusals_total{surface="agent",code="no_grant"}')).toBe(1);
    expect(sample(text, 'broker_pending_requests')).toBe(1);
    expect(sample(text, 'broker_active_grants')).toBe(1);
    expect(sample(text, 'broker_held_locks')).toBe(0);
    // broker.grant approved one request; the test clock does not move, so it took 0 s.
    expect(sample(text, 'broker_approval_seconds_count{outcome="approved"}')).toBe(1);
    expect(sample(text, 'broker_audit_append_seconds_count')).toBeGreaterThan(3);
    expect(sample(text, 'broker_audit_fsync_seconds_count')).toBeGreaterThan(0);
    expect(
      sample(
        text,
        'broker_nextcloud_request_seconds_count{instance="personal",method="GET",status="200"}',
      ),
    ).toBeGreaterThan(0);
  });

  it('holds no path, file name, reason or secret of those operations', async () => {
    const { text } = await scrape(broker.url, METRICS_TOKEN);
    for (const planted of [
      FOLDER,
      FILE,
      NEW_FILE,
      DENIED,
      REASON,
      AGENT_TOKEN,
      TRANSFER_TOKEN,
      METRICS_TOKEN,
      APP_PASSWORD,
      broker.fake.url,
    ]) {
      expect(text.toLowerCase()).not.toContain(planted.toLowerCase());
    }
    // Every label value is from a closed set: identifiers, methods, statuses, numbers.
    for (const [, value] of text.matchAll(/="([^"]*)"/g)) {
      expect(value).toMatch(/^([a-z_]+|[A-Z]+|[0-9]{3}|[0-9.e+-]+|\+Inf)$/);
    }
  });
});

function typeOf(name: string): string {
  if (name.endsWith('_total')) return 'counter';
  if (name.endsWith('_seconds')) return 'histogram';
  return 'gauge';
}
