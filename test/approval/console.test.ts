import { PassThrough } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConsoleGateway } from '../../broker/approval/console.js';
import { ApprovalUnavailableError } from '../../broker/approval/gateway.js';
import { verifyAudit } from '../../broker/audit/index.js';
import { memoryLogger } from '../../broker/base/log.js';
import { harness, type Harness, H, LIFECYCLE, T0 } from '../../support/approval.js';

let h: Harness;
let input: PassThrough;
let output: PassThrough;
let printed: string;
let gateway: ConsoleGateway;

beforeEach(async () => {
  h = await harness();
  input = new PassThrough();
  output = new PassThrough();
  printed = '';
  output.on('data', (chunk: Buffer) => (printed += chunk.toString('utf8')));
  gateway = consoleOn(h);
});

function consoleOn(on: Harness): ConsoleGateway {
  return new ConsoleGateway({
    input,
    output,
    engine: on.engine,
    now: () => on.clock.now,
    lifecycle: LIFECYCLE,
  });
}

afterEach(async () => {
  await gateway.stop();
  await h.close();
});

/** Types lines as the owner and waits until every one has been answered. */
async function type(...lines: string[]): Promise<string> {
  const before = printed.length;
  for (const line of lines) input.write(`${line}\n`);
  // readline emits 'line' on a later tick; give it one, then wait for the answers.
  await new Promise((r) => setImmediate(r));
  await gateway.idle();
  return printed.slice(before);
}

describe('ConsoleGateway', () => {
  it('is unavailable before start and after the input ends', async () => {
    const n = h.request([['a', 'read']]);
    expect(gateway.healthy()).toBe(false);
    await expect(gateway.postRequest(h.store.getRequest(n)!)).rejects.toMatchObject({
      code: 'not_started',
    });
    await gateway.start();
    expect(gateway.healthy()).toBe(true);
    input.end();
    await new Promise((r) => setImmediate(r));
    expect(gateway.healthy()).toBe(false);
    const err = await gateway.announce('x').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApprovalUnavailableError);
    expect(err).toMatchObject({ code: 'stopped' });
  });

  it('end to end: a request is shown, the owner approves a subset with an expiry, then revokes', async () => {
    await gateway.start();
    expect(printed).toContain('type "help" for the commands');
    const n = h.request([
      ['Documents/Taxes', 'read'],
      ['Documents/Taxes/summary.md', 'write'],
    ]);
    await gateway.postRequest(h.store.getRequest(n)!);
    expect(printed).toContain(`Request ${n} · instance personal`);
    expect(printed).toContain('2. write `Documents/Taxes/summary.md`');
    expect(printed).toContain('Undecided, it expires in 12h.');
    // A terminal has no reactions: only the commands to type are offered.
    expect(printed).toContain(
      `Type "approve ${n}" (all 2 items, 1d), "approve ${n} 1,2 8h", "deny ${n}" or "show ${n}".`,
    );
    expect(printed).not.toMatch(/👍|👎/);

    const approved = await type(`approve ${n} 2 2h`);
    expect(approved).toContain(
      `Approved request ${n} (1 of 2 items) until 2025-01-02 14:00 UTC (2h):`,
    );
    expect(approved).toContain('Not granted: item 1.');
    expect(approved.endsWith('broker> ')).toBe(true);
    expect(h.store.activeGrants().map((g) => [g.path, g.expiresAt])).toEqual([
      ['Documents/Taxes/summary.md', T0 + 2 * H],
    ]);
    expect(h.store.getRequest(n)?.decidedBy).toBe('console');

    h.clock.now += 46 * 60_000;
    const status = await type('status');
    expect(status).toContain('1h 14m left');

    const revoked = await type('revoke all');
    expect(revoked).toContain('Revoked 1 grant (all grants):');
    expect(h.store.activeGrants()).toEqual([]);

    const actors = h
      .records()
      .filter((r) => r.event !== 'start')
      .map((r) => [r.event, r.actor]);
    expect(actors).toEqual([
      ['decision', 'console'],
      ['revoke', 'console'],
    ]);
    expect(verifyAudit(h.dir)).toMatchObject({ ok: true });
  });

  it('answers every line in order, including help, chatter and mistakes', async () => {
    await gateway.start();
    const a = h.request([['a', 'read']]);
    const b = h.request([['b', 'read']]);
    const out = await type('help', 'hello', `approve ${a} 0`, `deny ${b}`, '', `deny ${b}`);
    const help = out.indexOf('approve N 1,3 8h');
    const chatter = out.indexOf('Not a command. Type "help" for the commands.');
    const mistake = out.indexOf('1 or more');
    const denied = out.indexOf(`Denied request ${b}`);
    const again = out.indexOf(`Request ${b} was already decided`);
    expect([help, chatter, mistake, denied, again].every((i) => i >= 0)).toBe(true);
    expect(help < chatter && chatter < mistake && mistake < denied && denied < again).toBe(true);
    expect(h.store.getRequest(a)?.state).toBe('pending');
  });

  it('accepts CRLF line endings', async () => {
    await gateway.start();
    const n = h.request([['a', 'read']]);
    input.write(`approve ${n}\r\n`);
    await new Promise((r) => setImmediate(r));
    await gateway.idle();
    expect(h.store.activeGrants()).toHaveLength(1);
  });

  it('attack: a hostile path cannot send terminal escape sequences or hide characters', async () => {
    await gateway.start();
    // The store refuses such a path (the wall); the display must hold on its own anyway.
    const n = h.request([['Docs/invoice', 'write']], 'personal', 'ok\u001b[2J\u001b[1;1H');
    const stored = h.store.getRequest(n)!;
    await gateway.postRequest({
      ...stored,
      items: [
        { n: 1, kind: 'files', path: 'Docs/invoice\u202Efdp.exe', mode: 'write', grant: null },
      ],
    });
    expect(printed).toContain('`Docs/invoice\\u{202E}fdp.exe`');
    expect(printed).toContain('ok\\u{001B}[2J');
    expect(printed).not.toContain('\u001b');
    expect(printed).not.toContain('\u202E');
  });

  it('announce prints the text and a fresh prompt', async () => {
    await gateway.start();
    await gateway.announce('Grant 3 expired.\nsecond line');
    expect(printed.endsWith('\nGrant 3 expired.\nsecond line\nbroker> ')).toBe(true);
  });

  it('attack: an announcement cannot carry terminal control characters', async () => {
    await gateway.start();
    await gateway.announce('x\u001b]0;owned\u0007\u009b2J');
    expect(printed).toContain('x\\u{001B}]0;owned\\u{0007}\\u{009B}2J');
  });

  it('a broken output stream ends approvals instead of crashing', async () => {
    const logger = memoryLogger();
    gateway = new ConsoleGateway({
      input,
      output,
      engine: h.engine,
      now: () => h.clock.now,
      lifecycle: LIFECYCLE,
      logger,
    });
    await gateway.start();
    output.emit('error', Object.assign(new Error('write EPIPE'), { code: 'EPIPE' }));
    await new Promise((r) => setImmediate(r));
    expect(gateway.healthy()).toBe(false);
    expect(logger.lines.join('')).toContain('write EPIPE');
  });

  it('stop makes it unhealthy and waits for the line being handled', async () => {
    await gateway.start();
    const n = h.request([['a', 'read']]);
    input.write(`approve ${n}\n`);
    await new Promise((r) => setImmediate(r));
    await gateway.stop();
    expect(gateway.healthy()).toBe(false);
    expect(h.store.activeGrants()).toHaveLength(1);
    expect(printed).toContain(`Approved request ${n}`);
  });

  it('wrong answer fixed: help on the console names no reactions, and shows deny all, show N and the pending cap', async () => {
    await gateway.stop();
    await h.close();
    h = await harness({ channel: 'console', lifecycle: { max_pending: 10 } });
    gateway = consoleOn(h);
    await gateway.start();
    const help = await type('help');
    expect(help).toContain('deny all');
    expect(help).toContain('show N');
    expect(help).toContain('At most 10 requests wait for you at once (lifecycle.max_pending)');
    expect(help).toContain('create, overwrite, move and trash anything inside it');
    expect(help).not.toMatch(/👍|👎|🛇|📋|[Rr]eaction/);
    // The Matrix engine (the default) does list them.
    const matrix = await harness({ lifecycle: { max_pending: 10 } });
    try {
      expect((await matrix.engine.handleText('help', 'x'))?.text).toContain(
        'Reactions on a request: 👍',
      );
    } finally {
      await matrix.close();
    }
  });

  it('status lists the items of a pending request, escaped and capped, broadest first', async () => {
    await gateway.start();
    const n = h.request([
      ['Documents/Taxes/2024/receipts', 'read'],
      ['Docs/p\u0430yroll', 'read'],
      [`Deep/${'x'.repeat(200)}/${'y'.repeat(200)}/end.txt`, 'read'],
      ['Documents', 'write'],
    ]);
    const status = await type('status');
    expect(status).toContain(`• request ${n} · personal · 4 items — expires in 12h`);
    expect(status).toContain('   4. write `Documents`');
    expect(status).toContain('   2. read `Docs/p\\u{0430}yroll`');
    expect(status).toContain(`   … and 1 more: type "show ${n}"`);
    expect(status).not.toContain('\u0430');
  });

  it('show N prints every item in full, in item order', async () => {
    await gateway.start();
    const long = `Deep/${'x'.repeat(200)}/${'y'.repeat(200)}/end.txt`;
    const items: [string, 'read' | 'write'][] = Array.from({ length: 12 }, (_, i) => [
      `${long}${i}`,
      'read',
    ]);
    const n = h.request(items);
    const shown = await type(`show ${n}`);
    for (const [i, [path]] of items.entries()) {
      expect(shown).toContain(`${i + 1}. read \`${path}\` — waiting for your decision`);
    }
    expect(await type('show 999')).toContain('There is no request 999');
  });

  it('deny all denies every pending request, confirms the count, and audits each', async () => {
    await gateway.start();
    const ids = [1, 2, 3].map(() => h.request([['a', 'read']]));
    const out = await type('deny all');
    expect(out).toContain(`Denied 3 pending requests (${ids.join(', ')}); nothing was granted.`);
    expect(ids.map((id) => h.store.getRequest(id)?.state)).toEqual(['denied', 'denied', 'denied']);
    const lines = h.records().filter((r) => r.event === 'decision');
    expect(lines.map((r) => [r.request, r.command, r.outcome, r.actor])).toEqual(
      ids.map((id) => [id, 'deny all', 'denied', 'console']),
    );
    expect(await type('deny all')).toContain('No pending requests; nothing to deny.');
  });

  describe('with the owner socket', () => {
    function withSocket(extra: { interactive?: boolean; onQuit?: (why: string) => void }) {
      return new ConsoleGateway({
        input,
        output,
        engine: h.engine,
        now: () => h.clock.now,
        lifecycle: LIFECYCLE,
        ownerSocket: '/srv/broker/data/owner.sock',
        ...extra,
      });
    }

    it('stdin not a terminal: says so, and when it ends stays healthy, pointing to the owner socket', async () => {
      await gateway.stop();
      gateway = withSocket({ interactive: false });
      await gateway.start();
      expect(printed).toContain('stdin is not a terminal: approve from a shell of this user');
      // Headless: no `broker> ` prompt, from the greeting on (nobody reads it there).
      expect(printed).not.toContain('broker> ');
      input.end();
      await new Promise((r) => setImmediate(r));
      expect(gateway.healthy()).toBe(true);
      expect(printed).toContain(
        'Console input ended: approvals continue over the owner socket (/srv/broker/data/owner.sock)',
      );
      const n = h.request([['a', 'read']]);
      await gateway.postRequest(h.store.getRequest(n)!);
      expect(printed).toContain(`broker approve ${n} or broker deny ${n}`);
      expect(printed).not.toContain('broker> ');
    });

    it('on a terminal, Ctrl-D (end of input) asks the broker to stop', async () => {
      await gateway.stop();
      const quits: string[] = [];
      gateway = withSocket({ interactive: true, onQuit: (why) => quits.push(why) });
      await gateway.start();
      input.end();
      await new Promise((r) => setImmediate(r));
      expect(quits).toEqual(['end of console input']);
    });

    it('`quit` asks the broker to stop; nothing reaches the engine', async () => {
      await gateway.stop();
      const quits: string[] = [];
      gateway = withSocket({ interactive: true, onQuit: (why) => quits.push(why) });
      await gateway.start();
      const out = await type('quit');
      expect(quits).toEqual(['quit typed on the console']);
      expect(out).toBe('Stopping the broker.\n');
      expect(h.records().filter((r) => r.event === 'decision')).toEqual([]);
    });

    it('a log line never lands on the prompt line: the prompt is cleared and drawn again', async () => {
      await gateway.stop();
      gateway = withSocket({ interactive: true });
      await gateway.start();
      const logged: string[] = [];
      gateway.aroundLog(() => {
        logged.push(printed);
        printed += 'LOG\n';
      });
      expect(logged[0]?.endsWith('broker> \r\u001b[2K')).toBe(true);
      expect(printed.endsWith('LOG\nbroker> ')).toBe(true);
      // Outside a terminal there is no prompt, so no escape codes and nothing to redraw.
      await gateway.stop();
      gateway = withSocket({ interactive: false });
      await gateway.start();
      const before = printed.length;
      gateway.aroundLog(() => (printed += 'LOG2\n'));
      expect(printed.slice(before)).toBe('LOG2\n');
    });
  });
});
