/**
 * The state probes: sequences and races that try to put the broker's state machines
 * somewhere they must never be (see review/runner.ts). Run with `npm run review` (or
 * `npm run review -- probes`).
 *
 * - grant decisions raced from three SQLite connections in three threads;
 * - replayed and rebound Matrix events against the real gateway;
 * - grants ending while bytes move, tickets reused or misused, the clock going back.
 */
import { matrixGroup } from './probes/matrix.js';
import { raceGroup } from './probes/races.js';
import { transferGroup } from './probes/transfer.js';
import type { Group } from './runner.js';

export const groups: readonly Group[] = [raceGroup, matrixGroup, transferGroup];
