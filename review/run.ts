/**
 * `npm run review`: the attack battery and the state probes, against the real modules
 * and the real daemon on 127.0.0.1 (fake Nextcloud, fake Matrix homeserver).
 *
 *   npm run review                    everything
 *   npm run review -- attacks         only review/attack-battery.ts
 *   npm run review -- probes          only review/state-probes.ts
 *   npm run review -- <text> …        only cases whose group or name contains a text
 *
 * Prints one line per case and `N passed, M failed` last; exits 1 on any surprise.
 */
import { groups as attackGroups } from './attack-battery.js';
import { groups as probeGroups } from './state-probes.js';
import { runGroups, summaryLine, type Group } from './runner.js';

const args = process.argv.slice(2);
const wantAttacks = args.includes('attacks');
const wantProbes = args.includes('probes');
const texts = args.filter((a) => a !== 'attacks' && a !== 'probes').map((a) => a.toLowerCase());

const selected: Group[] = [
  ...(wantProbes && !wantAttacks ? [] : attackGroups),
  ...(wantAttacks && !wantProbes ? [] : probeGroups),
];

const print = (line: string): void => {
  process.stdout.write(`${line}\n`);
};

const started = Date.now();
const summary = await runGroups(selected, print, {
  ...(texts.length === 0
    ? {}
    : {
        filter: (group: string, name: string) =>
          texts.some((t) => group.toLowerCase().includes(t) || name.toLowerCase().includes(t)),
      }),
});

const openFindings = [
  ...new Set(summary.results.filter((r) => !r.ok && r.finding).map((r) => r.finding)),
];
const surprises = summary.results.filter((r) => !r.ok && r.finding === undefined).length;
print('');
if (openFindings.length > 0) {
  print(`open findings: ${openFindings.join(', ')}`);
}
if (surprises > 0) print(`${surprises} unexpected failure(s) not yet reported as findings`);
print(`review took ${((Date.now() - started) / 1000).toFixed(1)} s`);
print(summaryLine(summary));
// Some libraries (matrix-js-sdk) keep timers alive; the verdict is in, so leave now.
process.exit(summary.failed > 0 ? 1 : 0);
