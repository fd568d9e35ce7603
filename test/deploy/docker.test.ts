/**
 * No Docker engine runs on our machines, so the image and compose files are checked
 * by parsing them and asserting the properties an owner relies on.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { thisNode } from '../../scripts/record-node.js';
import { nodeFlagsOf, shippedNodeFlags } from '../../support/node-flags.js';

/** The flags `npm start` runs the daemon with: the memory and GC settings we measured. */
const SHIPPED = shippedNodeFlags(new URL('../..', import.meta.url).pathname);

const dockerfile = readFileSync(new URL('../../Dockerfile', import.meta.url), 'utf8');

/** Dockerfile instructions with continuation lines joined and comments dropped. */
function instructions(text: string): { op: string; args: string }[] {
  const joined = text.replace(/\\\n/g, ' ');
  return joined
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'))
    .map((l) => {
      const [op = '', ...rest] = l.split(/\s+/);
      return { op: op.toUpperCase(), args: rest.join(' ') };
    });
}

const steps = instructions(dockerfile);
/** The uid the image runs the daemon as (its USER), one of its own. */
const DAEMON_UID = '10001';
const stages = steps.filter((s) => s.op === 'FROM');
const lastStageIndex = steps.lastIndexOf(stages[stages.length - 1] ?? { op: '', args: '' });
const runtime = steps.slice(lastStageIndex);

describe('Dockerfile', () => {
  it('is multi-stage on a pinned Node LTS slim image', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    const arg = steps.find((s) => s.op === 'ARG' && s.args.startsWith('NODE_IMAGE='));
    expect(arg?.args).toMatch(/^NODE_IMAGE=node:(22|24)\.\d+\.\d+-[a-z]+-slim$/);
    for (const s of stages) expect(s.args).toMatch(/^\$\{NODE_IMAGE\}/);
  });

  it('installs production dependencies with npm ci --omit=dev', () => {
    expect(steps.some((s) => s.op === 'RUN' && /npm ci --omit=dev/.test(s.args))).toBe(true);
  });

  it('attack: the owner socket belongs on the host to the desktop user (uid 1000), who runs the agent too', () => {
    // Security: the daemon runs as a user of its own, never root, never uid 1000.
    const user = runtime.filter((s) => s.op === 'USER').at(-1);
    expect(user?.args).toBe(`${DAEMON_UID}:${DAEMON_UID}`);
    expect(DAEMON_UID).not.toBe('1000');
    expect(Number(DAEMON_UID)).toBeGreaterThanOrEqual(10_000);
    const made = runtime.find((s) => s.op === 'RUN' && s.args.includes('useradd'));
    expect(made?.args).toContain(`--uid ${DAEMON_UID}`);
    expect(made?.args).toContain(`--gid ${DAEMON_UID}`);
  });

  it('starts the daemon with the node flags of npm start, which the benchmarks measure', () => {
    const entrypoint = JSON.parse(
      runtime.find((s) => s.op === 'ENTRYPOINT')?.args ?? '[]',
    ) as string[];
    expect(nodeFlagsOf(entrypoint.join(' '))).toEqual(SHIPPED);
  });

  it('has a HEALTHCHECK on /health and a data volume', () => {
    expect(runtime.find((s) => s.op === 'HEALTHCHECK')?.args).toContain('/health');
    expect(runtime.find((s) => s.op === 'VOLUME')?.args).toContain('/app/data');
  });

  it('writes nothing outside the data volume at run time (read-only root works)', () => {
    // Only the data folder is prepared writable for uid 1000; the command serves from /app.
    const chowned = runtime.filter((s) => s.op === 'RUN' && s.args.includes('chown'));
    for (const s of chowned) expect(s.args).toMatch(/chown 10001:10001 \/app\/data$/);
    // Security: the data folder is private from the start (issue 14.9).
    expect(chowned.some((s) => s.args.includes('chmod 700 /app/data'))).toBe(true);
    expect(runtime.find((s) => s.op === 'CMD')?.args).toContain('serve');
  });
});

describe('docker-compose.yml', () => {
  const compose = parse(
    readFileSync(new URL('../../docker-compose.yml', import.meta.url), 'utf8'),
  ) as {
    services: Record<string, Record<string, unknown>>;
  };
  const broker = compose.services.broker ?? {};

  it('publishes the port only on an address the owner must set', () => {
    expect(broker.ports).toEqual(['${BROKER_BIND_ADDRESS:?set the interface address}:8765:8765']);
  });

  it('mounts config.yaml read-only and ./data', () => {
    expect(broker.volumes).toContain('./config.yaml:/app/config.yaml:ro');
    expect(broker.volumes).toContain('./data:/app/data');
  });

  it('runs read-only as the image’s own uid, without privileges', () => {
    expect(broker.read_only).toBe(true);
    expect(broker.user).toBe(`${DAEMON_UID}:${DAEMON_UID}`);
    expect(broker.cap_drop).toEqual(['ALL']);
    expect(broker.security_opt).toContain('no-new-privileges:true');
  });
});

describe('the runbook’s Docker setup gives the data folder to the same uid', () => {
  it('chowns data and config.yaml to it, and says what the socket’s owner means', () => {
    const runbook = readFileSync(new URL('../../docs/runbook.md', import.meta.url), 'utf8');
    expect(runbook).toContain(`sudo chown ${DAEMON_UID}:${DAEMON_UID} data config.yaml`);
    expect(runbook).not.toMatch(/chown 1000:1000/);
    expect(runbook).toMatch(
      /owner socket, `data\/owner\.sock`, belongs on the\s+host to uid 10001/,
    );
  });
});

describe('every documented way to run the daemon uses the same node flags', () => {
  it('npm start carries the young-generation cap and turns off the memory reducer', () => {
    expect(SHIPPED).toEqual([
      '--max-semi-space-size=4',
      '--initial-old-space-size=64',
      '--no-memory-reducer',
    ]);
  });

  it("the runbook's systemd unit carries the flags of npm start", () => {
    const runbook = readFileSync(new URL('../../docs/runbook.md', import.meta.url), 'utf8');
    const execStart = /^ExecStart=(.*)$/m.exec(runbook)?.[1] ?? '';
    expect(nodeFlagsOf(execStart)).toEqual(SHIPPED);
  });

  it("the runbook's unit starts the Node the install was built with, by its absolute path", () => {
    // It used to say /usr/bin/node, which on a machine with Node 20 there crashed.
    const runbook = readFileSync(new URL('../../docs/runbook.md', import.meta.url), 'utf8');
    expect(/^ExecStart=(\S+) /m.exec(runbook)?.[1]).toBe('$NODE');
    expect(runbook).not.toMatch(/^ExecStart=\/usr\/bin\/node/m);
    // $NODE is the path dist/node.json records (scripts/record-node.ts writes `path`),
    // read right before the unit is written, whose heredoc expands it.
    const unit =
      /```sh\n(NODE=.*)\n(sudo tee \/etc\/systemd\/system\/\S+\.service >\/dev\/null <<EOF)\n/.exec(
        runbook,
      );
    expect(unit?.[1]).toBe('NODE="$(jq -r .path /opt/nextcloud-access-broker/dist/node.json)"');
    expect(Object.keys(thisNode())).toContain('path');
  });
});
