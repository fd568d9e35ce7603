/**
 * `npm run conformance`: the MCP conformance suite (@modelcontextprotocol/conformance)
 * against the agent surface of a real broker.
 *
 * Starts a fake Nextcloud, starts the broker from a generated config (approval: console,
 * data in a temp folder), and puts a tiny proxy in front of /mcp that adds the agent's
 * bearer header (the suite cannot send one) and forwards everything else untouched,
 * the Host and Origin headers included, so the DNS-rebinding scenario reaches the
 * broker's own Host check. Runs the scenarios below; exits non-zero if any check fails.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { startBroker } from '../broker/main.js';
import { startFakeNextcloud } from '../fakes/nextcloud.js';

// The server scenarios that apply to the broker, per protocol revision. The others
// expect what the suite's reference server has and the broker does not: its test tools
// (tools-call-*, json-schema-2020-12, the tasks-* fixtures), logging, completion,
// resources, prompts, or a session (the SSE ones).
const SCENARIOS = {
  '2025-11-25': ['server-initialize', 'ping', 'tools-list', 'dns-rebinding-protection'],
  '2026-07-28': [
    'server-stateless',
    'tools-list',
    'caching',
    'http-header-validation',
    'dns-rebinding-protection',
  ],
} as const;
const ROOT = join(import.meta.dirname, '..');
const BIN = join(ROOT, 'node_modules', '.bin', 'conformance');

function startProxy(
  target: URL,
  token: string,
): Promise<{ port: number; close: () => Promise<void> }> {
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const upstream = request(
      {
        host: target.hostname,
        port: target.port,
        method: req.method,
        path: req.url,
        // Host, Origin and everything else pass through as sent; only auth is added.
        headers: { ...req.headers, authorization: `Bearer ${token}` },
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on('error', () => {
      if (!res.headersSent) res.writeHead(502);
      res.end();
    });
    req.pipe(upstream);
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      resolve({
        port: (server.address() as AddressInfo).port,
        close: () =>
          new Promise<void>((done) => {
            server.closeAllConnections();
            server.close(() => done());
          }),
      });
    });
  });
}

/** Runs one scenario; resolves with its exit code and everything it printed. */
function runScenario(
  url: string,
  version: string,
  scenario: string,
  outDir: string,
): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(
      BIN,
      [
        'server',
        ...['--url', url, '--spec-version', version, '--scenario', scenario],
        ...['--output-dir', outDir],
      ],
      {
        cwd: outDir,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    // Kept, and shown only when the run fails: the suite prints an accepted check as a
    // red FAILURE line, which would read as a broken build when nothing is wrong.
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    child.once('close', (code) => resolve({ code: code ?? 1, output }));
    child.once('error', (err) => resolve({ code: 1, output: `${output}${err.message}\n` }));
  });
}

/**
 * Failed checks that test something the broker does not have, each accepted only with
 * the suite's own message saying so (any other failure of the same check still fails),
 * and why, for the one line the run prints about them: the 2026-07-28 stateless checks
 * that need the suite's diagnostic tools (`test_missing_capability`,
 * `test_streaming_elicitation`, a logging tool), and the cache hints of prompts and
 * resources, which the broker does not serve (-32601).
 */
const DIAGNOSTIC_TOOLS = "need the suite's own diagnostic tools";
const NOT_SERVED = 'the broker serves no prompts or resources: -32601';
const NOT_APPLICABLE: Readonly<Record<string, { message: RegExp; why: string }>> = {
  'sep-2575-server-rejects-undeclared-capability': {
    message: /^Not testable:/,
    why: DIAGNOSTIC_TOOLS,
  },
  'sep-2575-missing-capability-http-400': { message: /^Not testable:/, why: DIAGNOSTIC_TOOLS },
  'sep-2575-http-server-no-independent-requests-on-stream': {
    message: /^Not testable:/,
    why: DIAGNOSTIC_TOOLS,
  },
  'sep-2575-server-no-log-without-loglevel': { message: /^Not testable:/, why: DIAGNOSTIC_TOOLS },
  'sep-2549-prompts-list-caching-hints': { message: /-32601/, why: NOT_SERVED },
  'sep-2549-resources-list-caching-hints': { message: /-32601/, why: NOT_SERVED },
  'sep-2549-resources-templates-list-caching-hints': { message: /-32601/, why: NOT_SERVED },
};

interface Check {
  id: string;
  status: string;
  errorMessage?: string;
}

/**
 * The failed checks of every checks.json under `dir`, and those accepted as not
 * applicable (by id); undefined when there is no checks.json.
 */
function checkResults(dir: string): { failed: string[]; accepted: string[] } | undefined {
  const failed: string[] = [];
  const accepted: string[] = [];
  let found = false;
  const walk = (d: string): void => {
    for (const name of readdirSync(d)) {
      const full = join(d, name);
      if (statSync(full).isDirectory()) walk(full);
      else if (name === 'checks.json') {
        found = true;
        const checks = JSON.parse(readFileSync(full, 'utf8')) as Check[];
        for (const c of checks) {
          if (c.status !== 'FAILURE') continue;
          if (NOT_APPLICABLE[c.id]?.message.test(c.errorMessage ?? '') === true) {
            accepted.push(c.id);
            continue;
          }
          failed.push(`${c.id} (${c.errorMessage ?? 'no message'})`);
        }
      }
    }
  };
  walk(dir);
  return found ? { failed, accepted } : undefined;
}

/** One line: the accepted checks, grouped by why they cannot be tested here. */
function acceptedLine(accepted: readonly string[]): string {
  const byWhy = new Map<string, string[]>();
  for (const id of new Set(accepted)) {
    const why = NOT_APPLICABLE[id]?.why ?? 'accepted';
    byWhy.set(why, [...(byWhy.get(why) ?? []), id]);
  }
  const groups = [...byWhy].map(([why, ids]) => `${ids.join(', ')} (${why})`);
  return `conformance: not testable against the broker, accepted: ${groups.join('; ')}\n`;
}

async function main(): Promise<number> {
  const work = mkdtempSync(join(tmpdir(), 'broker-conformance-'));
  const password = randomBytes(18).toString('base64url');
  const tokens = {
    agent: randomBytes(24).toString('hex'),
    transfer: randomBytes(24).toString('hex'),
  };
  const fake = await startFakeNextcloud({ password });
  const config = join(work, 'config.yaml');
  writeFileSync(
    config,
    [
      'server: { host: 127.0.0.1, port: 0, allowed_hosts: [localhost, 127.0.0.1, "[::1]"] }',
      'tokens: { agent_env: CONF_AGENT, transfer_env: CONF_TRANSFER }',
      'approval: console',
      'data_dir: ./data',
      // Errors only: the DNS-rebinding scenario's refused hosts are expected warnings.
      'logging: { level: error }',
      'instances:',
      `  personal: { url: "${fake.url}", username: ${fake.user}, app_password_env: CONF_NC }`,
      '',
    ].join('\n'),
    { mode: 0o600 },
  );
  const stdin = new PassThrough();
  const broker = await startBroker(config, {
    env: { CONF_AGENT: tokens.agent, CONF_TRANSFER: tokens.transfer, CONF_NC: password },
    writeLog: (line) => process.stderr.write(line),
    stdin,
    stdout: new PassThrough().resume(),
  });
  const proxy = await startProxy(new URL(broker.url), tokens.agent);
  const results = join(work, 'results');
  mkdirSync(results);
  let exit = 0;
  let summary = '';
  try {
    const failed: string[] = [];
    const accepted: string[] = [];
    const failedOutput: string[] = [];
    for (const [version, scenarios] of Object.entries(SCENARIOS)) {
      for (const scenario of scenarios) {
        const out = join(results, version, scenario);
        mkdirSync(out, { recursive: true });
        const run = await runScenario(`http://127.0.0.1:${proxy.port}/mcp`, version, scenario, out);
        // The exit code counts the not-applicable checks too: the checks decide, and a
        // scenario that wrote none (it crashed) fails.
        const checks = checkResults(out);
        const before = failed.length;
        if (checks === undefined)
          failed.push(`${version} ${scenario}: no checks (exit ${run.code})`);
        else {
          failed.push(...checks.failed.map((c) => `${version} ${c}`));
          accepted.push(...checks.accepted);
        }
        if (failed.length > before) failedOutput.push(run.output);
      }
    }
    if (failed.length > 0) {
      process.stderr.write(failedOutput.join(''));
      process.stderr.write(`conformance: failed checks:\n  ${failed.join('\n  ')}\n`);
      exit = 1;
    } else if (accepted.length > 0) {
      summary = acceptedLine(accepted);
    }
  } finally {
    await proxy.close();
    await broker.stop();
    stdin.end();
    await fake.close();
    rmSync(work, { recursive: true, force: true });
  }
  const count = Object.values(SCENARIOS).flat().length;
  process.stdout.write(
    exit === 0
      ? `conformance: ${count} scenarios passed (2025-11-25 and 2026-07-28)\n${summary}`
      : '',
  );
  return exit;
}

process.exitCode = await main();
