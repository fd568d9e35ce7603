/**
 * The retention declaration (broker/config/retention.ts): what Nextcloud's
 * files_trashbin and files_versions `Expiration` make of each value. A write into a folder
 * someone else shared passes only when the declaration keeps young trash and every
 * version from space-driven expiry, so a value read the wrong way would guess toward a
 * purge. The table is Nextcloud's own parsing (34.0.1 `Expiration::parseRetentionObligation`).
 */
import { describe, expect, it } from 'vitest';
import {
  keepsFromSpaceExpiry,
  RetentionSchema,
  trashKeepsYoung,
  versionsKept,
} from '../../broker/config/retention.js';
import { parseRaw, validRaw } from './helpers.js';

describe('attack: a declaration that lets Nextcloud purge read as one that does not', () => {
  it.each([
    ['auto', false], // the default: purge anything for space
    ['auto, auto', false],
    ['30, auto', false], // keep 30 days "but delete anytime if space needed"
    ['auto, 30', false], // delete anytime if space needed
    ['0, 30', false], // "older than 0 days" is every item
    ['30', true], // min 30, max the default 30: no purge for space
    ['30, 60', true],
    [' 7 ,  7 ', true],
    ['disabled', true], // never expires
  ])('trashbin_retention_obligation %j keeps young trash: %s', (value, keeps) => {
    expect(trashKeepsYoung(value)).toBe(keeps);
  });

  it.each([
    ['auto', false],
    ['30, 60', false], // Storage::expire still deletes the oldest versions while over share
    ['disabled', true],
  ])('versions_retention_obligation %j keeps every version: %s', (value, kept) => {
    expect(versionsKept(value)).toBe(kept);
  });

  it('only both together keep a sharer’s trash and versions from space-driven expiry', () => {
    const declare = (trash: string, versions: string) =>
      RetentionSchema.parse({
        trashbin_retention_obligation: trash,
        versions_retention_obligation: versions,
      });
    expect(keepsFromSpaceExpiry(undefined)).toBe(false);
    expect(keepsFromSpaceExpiry(declare('30, 60', 'disabled'))).toBe(true);
    expect(keepsFromSpaceExpiry(declare('30, 60', 'auto'))).toBe(false);
    expect(keepsFromSpaceExpiry(declare('auto', 'disabled'))).toBe(false);
  });

  it('values Nextcloud does not take are refused, never read as a number', () => {
    for (const value of ['30 days', '-1', '30,', ', 30', '1e3', 'Disabled', '30, 60, 90'])
      expect(
        RetentionSchema.safeParse({
          trashbin_retention_obligation: value,
          versions_retention_obligation: 'disabled',
        }).success,
      ).toBe(false);
  });
});

describe('instances.<name>.retention in config.yaml', () => {
  it('is kept as declared, and absent when not set', () => {
    expect(parseRaw(validRaw()).config.instances.get('personal')?.retention).toBeUndefined();
    const raw = validRaw() as { instances: { personal: Record<string, unknown> } };
    raw.instances.personal['retention'] = {
      trashbin_retention_obligation: '30, 60',
      versions_retention_obligation: 'disabled',
    };
    expect(parseRaw(raw).config.instances.get('personal')?.retention).toEqual({
      trashbin_retention_obligation: '30, 60',
      versions_retention_obligation: 'disabled',
    });
  });
});
