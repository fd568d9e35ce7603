/**
 * The approval message names the kind of each item — read calendar `personal`, read
 * address book `contacts` — in the rendered text, on the console and in the Matrix room,
 * and says what write on a calendar allows (never what write on a folder does).
 */
import { PassThrough } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { ConsoleGateway } from '../../broker/approval/console.js';
import { REQUEST_ID_KEY } from '../../broker/approval/matrix/gateway.js';
import { renderRequest, WRITE_MEANS } from '../../broker/approval/request-message.js';
import { kindWriteMeans } from '../../broker/base/kinds.js';
import type { RequestRecord } from '../../broker/base/domain.js';
import { harness, LIFECYCLE } from '../../support/approval.js';
import { BOT, ROOM, startMatrixBroker, type MatrixBroker } from '../../support/daemon.js';
import { until } from '../../support/until.js';

const request: RequestRecord = {
  id: 4,
  instance: 'personal',
  reason: 'plan the week',
  state: 'pending',
  createdAt: 0,
  decidedAt: null,
  decidedBy: null,
  items: [
    { n: 1, kind: 'calendar', path: 'personal', mode: 'write', grant: null },
    { n: 2, kind: 'contacts', path: 'z-server-generated--system', mode: 'read', grant: null },
    { n: 3, kind: 'files', path: 'Documents', mode: 'read', grant: null },
  ],
};

describe('the request message names each item’s kind', () => {
  it('says calendar and address book before the name, and what the generated book holds', () => {
    const { plain, html } = renderRequest(request, { expiresIn: 3_600_000 });
    expect(plain).toContain('1. write calendar `personal`');
    expect(plain).toContain(
      "2. read address book `z-server-generated--system` (the server's directory of every account)",
    );
    expect(plain).toContain('3. read `Documents`');
    expect(plain).toContain(kindWriteMeans('calendar'));
    expect(plain).not.toContain(WRITE_MEANS);
    expect(html).toContain('calendar <code>personal</code>');
  });

  it('prints the kind on the console', async () => {
    const h = await harness();
    const output = new PassThrough();
    let printed = '';
    output.on('data', (c: Buffer) => (printed += c.toString('utf8')));
    const gateway = new ConsoleGateway({
      input: new PassThrough(),
      output,
      engine: h.engine,
      now: () => h.clock.now,
      lifecycle: LIFECYCLE,
    });
    try {
      await gateway.start();
      await gateway.postRequest(request);
      expect(printed).toContain('write calendar `personal`');
      expect(printed).toContain('read address book `z-server-generated--system`');
    } finally {
      await gateway.stop();
      await h.close();
    }
  });
});

describe('in the Matrix room', () => {
  let rig: MatrixBroker;
  afterAll(async () => {
    await rig?.close();
  });

  it('the bot’s request message reads "read calendar `personal`"', async () => {
    rig = await startMatrixBroker();
    const agent = await rig.agent();
    const id = await rig.request(agent, [{ kind: 'calendar', path: 'personal', mode: 'read' }]);
    await until('the request is posted', () => rig.requestMessage(id) !== undefined);
    const event = rig.hs
      .timeline(ROOM)
      .find((e) => e.sender === BOT && e.content[REQUEST_ID_KEY] === id);
    expect(String(event?.content.body)).toContain('1. read calendar `personal`');
  });
});
