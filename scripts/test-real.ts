/**
 * `npm run test:real`: the real-server suites (vitest projects `real` and `real-oldest`,
 * vitest.config.ts) at the same time. Each resets and drives its own server, and both spend
 * most of their time waiting on it, so side by side they take about as long as the longer
 * one. In one vitest run they could not: projects of one group share one worker pool, and
 * each real project needs its files one after another.
 *
 * A server that is not described (NC_URL, NC_OLDEST_URL) is left out here without a word:
 * the unit run before this one has already said so, or, on CI, failed (vitest.config.ts).
 */
import { runTogether, type Job } from './lib/together.js';

const described = (prefix: string): boolean => (process.env[`${prefix}URL`] ?? '') !== '';
const vitest = (project: string): Job => ({
  name: project,
  command: 'npx',
  args: ['vitest', 'run', '--project', project],
});

const jobs: Job[] = [];
if (described('NC_')) jobs.push(vitest('real'));
if (described('NC_OLDEST_')) jobs.push(vitest('real-oldest'));
process.exitCode = jobs.length === 0 ? 0 : await runTogether(jobs);
