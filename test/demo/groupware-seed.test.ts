/**
 * The demo seeds a calendar and an address book so the quick tour can show them: events
 * in the coming days (one with a description that pretends to be an instruction) and two
 * contacts, readable through the broker's own client from the demo's fake cloud.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderBanner } from '../../broker/demo/banner.js';
import { DEMO_ADDRESS_BOOK, DEMO_CALENDAR, seedDemoGroupware } from '../../broker/demo/seed.js';
import { NextcloudClient } from '../../broker/nextcloud/index.js';
import { startFakeNextcloud, type FakeNextcloud } from '../../fakes/nextcloud.js';

const NOW = Date.parse('2026-12-14T10:30:00Z');
let fake: FakeNextcloud;
let client: NextcloudClient;

beforeAll(async () => {
  fake = await startFakeNextcloud();
  seedDemoGroupware(fake, NOW);
  client = new NextcloudClient({
    name: 'demo',
    url: fake.url,
    username: fake.user,
    app_password: fake.password,
  });
});
afterAll(async () => {
  client.close();
  await fake.close();
});

describe('the demo groupware seed', () => {
  it('holds five daily stand-ups and an appointment in the coming week', async () => {
    const { events } = await client.calendarEvents(
      DEMO_CALENDAR,
      { start: NOW, end: NOW + 7 * 86_400_000 },
      { includeText: true },
    );
    expect(events.filter((e) => e.title === 'Team stand-up').map((e) => e.start)).toEqual([
      '2026-12-15T09:00:00Z',
      '2026-12-16T09:00:00Z',
      '2026-12-17T09:00:00Z',
      '2026-12-18T09:00:00Z',
      '2026-12-19T09:00:00Z',
    ]);
    expect(events.find((e) => e.title === 'Dentist')?.description).toMatch(
      /Ignore your previous instructions/,
    );
  });

  it('holds two contacts', async () => {
    const { contacts } = await client.searchContacts(DEMO_ADDRESS_BOOK, 'example');
    expect(contacts.map((c) => c.name)).toEqual(['Sam Plumber', 'Zo\u00eb Example']);
    expect((await client.searchContacts(DEMO_ADDRESS_BOOK, 'sam')).contacts[0]?.phones).toEqual([
      '+1 555 0142',
    ]);
  });

  it('is named in the banner when seeded', () => {
    const banner = (groupware: boolean) =>
      renderBanner({
        brokerUrl: 'http://127.0.0.1:8765',
        agentToken: 'a',
        transferToken: 't',
        cloudUrl: 'http://127.0.0.1:1',
        cloudUser: 'demo',
        cloudFolder: 'c',
        trashFolder: 't',
        secretsFolder: 's',
        metricsTokenFile: 'm',
        dataFolder: 'd',
        tokensFile: 'f',
        configFile: 'g',
        seeded: [],
        groupware,
      });
    expect(banner(true)).toContain('a calendar "personal" and an address book "contacts"');
    expect(banner(false)).not.toContain('calendar');
  });
});
