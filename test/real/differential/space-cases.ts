/**
 * What the space guard reads (nextcloud/space.ts), on the fake and the real server alike
 * (docs/nextcloud-behaviour.md, "Space-driven expiry"):
 * - a folder another user shared answers `oc:owner-id` (theirs) and
 *   `quota-available-bytes` (their free space, -3 without a quota), each path's figures
 *   cached five minutes from its first read; a file answers no quota figures;
 * - the user's own folder answers the user's free space, cached the same way.
 * Folder names are this file's own: Nextcloud's cache is per user and path, and outlives
 * the reset between cases.
 */
import { SPACE_TARGET_BODY } from '../../../broker/nextcloud/space.js';
import type { Case, Step } from './steps.js';

const XML = 'application/xml; charset=utf-8';
const MiB = 1024 * 1024;

/** The guard's read of the path a write lands at. */
const spaceRead = (name: string, target: string): Step => ({
  name,
  method: 'PROPFIND',
  target,
  headers: { 'Content-Type': XML, Depth: '0' },
  body: SPACE_TARGET_BODY,
});

const create = (name: string, target: string, bytes: number): Step => ({
  name,
  method: 'PUT',
  target,
  headers: { 'Content-Type': 'application/octet-stream', 'If-None-Match': '*' },
  body: Buffer.alloc(bytes, 7),
});

export const SPACE_CASES: readonly Case[] = [
  {
    name: 'a received share of a sharer with a 60 MB quota: their free space, cached per path',
    received: ['SpaceShared'],
    sharerQuota: { occ: '60 MB', bytes: 60 * MiB },
    steps: [
      spaceRead('PROPFIND the share root for its owner and free space', '~/SpaceShared'),
      create('PUT 1000 bytes into the share', '~/SpaceShared/new.bin', 1000),
      spaceRead('PROPFIND the share root again (cached)', '~/SpaceShared'),
      { name: 'MKCOL a folder in the share', method: 'MKCOL', target: '~/SpaceShared/sub' },
      spaceRead('PROPFIND the new folder, read for the first time', '~/SpaceShared/sub'),
      spaceRead('PROPFIND a file in the share (no quota figures)', '~/SpaceShared/new.bin'),
    ],
  },
  {
    name: 'a received share of a sharer without a quota: -3',
    received: ['SpaceFree'],
    steps: [spaceRead('PROPFIND the share root for its owner and free space', '~/SpaceFree')],
  },
  {
    name: 'the user’s own folder with a quota of 10 MB: the user’s free space, cached per path',
    quota: { occ: '10 MB', bytes: 10 * MiB },
    steps: [
      { name: 'MKCOL a folder', method: 'MKCOL', target: '~/SpaceOwn' },
      spaceRead('PROPFIND it for its owner and free space', '~/SpaceOwn'),
      create('PUT 2000 bytes into it', '~/SpaceOwn/a.bin', 2000),
      spaceRead('PROPFIND it again (cached)', '~/SpaceOwn'),
      { name: 'MKCOL a folder in it', method: 'MKCOL', target: '~/SpaceOwn/sub' },
      spaceRead('PROPFIND the new folder, read for the first time', '~/SpaceOwn/sub'),
    ],
  },
];
