/**
 * The owner's commands from any shell of the broker's user (docs/contracts.md §6):
 * `broker approve N [ITEMS] [DURATION]`, `deny N|all`, `revoke N|INSTANCE|all`,
 * `show N`, `status`, `grants`. Each sends one request over the running broker's owner socket
 * (`<data_dir>/owner.sock`), where the approval console's parser and engine apply it,
 * audited with actor `socket`. `--json` prints one JSON object; else text for a person.
 */
import type { OwnerRequest, OwnerResponse } from '../../broker/approval/owner/protocol.js';
import { describeProblem, parseCommandArgs } from '../args.js';
import { type Command, ExitCode } from '../command.js';
import { forTerminal, jsonLine } from '../terminal.js';
import { grantsTable } from './owner-table.js';
import { ownerDataDir } from './owner-target.js';

export interface OwnerIo {
  env: NodeJS.ProcessEnv;
  cwd: () => string;
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  now: () => number;
}

export const FINDING = `The broker is found through the configuration \`broker serve\` uses: --config FILE,
else $BROKER_CONFIG, else ./config.yaml, else the demo's ./data/demo/config.yaml. Only
data_dir is read from it (no secrets needed): the command talks to <data_dir>/owner.sock,
which only the broker's own OS user can open.`;

const COMMON_OPTIONS = `Options:
  --config FILE   the broker's configuration (see above)
  --json          one JSON object on stdout instead of text`;

const EXITS = `Exit codes: 0 done · 1 bad usage or configuration · 2 no broker running, or the
            owner socket is not safe to use · 3 refused (nothing changed; the text says why)`;

export interface Spec {
  readonly name: string;
  readonly summary: string;
  readonly usage: string;
  readonly about: string;
  readonly example: string;
  readonly min: number;
  readonly max: number;
  readonly request: (positionals: readonly string[]) => OwnerRequest;
  /** The exit codes, when they differ from the decisions'. */
  readonly exits?: string;
  /** The text for a person (default: the broker's answer as the console shows it). */
  readonly human?: (response: OwnerResponse & { ok: true }, now: number) => string;
}

const helpOf = (s: Spec): string =>
  `Usage: ${s.usage}\n\n${s.about}\n\n${FINDING}\n\n${COMMON_OPTIONS}\n\n${s.exits ?? EXITS}\n\nExample:\n  ${s.example}\n`;

const SPECS: readonly Spec[] = [
  {
    name: 'approve',
    summary: 'approve request N on the running broker (approve N [ITEMS] [DURATION])',
    usage: 'broker approve N [ITEMS] [DURATION] [--config FILE] [--json]',
    about: `Approves request N as typing "approve N …" on the approval console would: every
item, or only ITEMS (e.g. 1,3), for the default time or DURATION (e.g. 8h; s, m, h, d;
at most lifecycle.max_grant). Audited as a decision with actor "socket".`,
    example: 'broker approve 3 1,2 2h',
    min: 1,
    max: 3,
    request: (p) => ({ op: 'command', text: ['approve', ...p].join(' ') }),
  },
  {
    name: 'deny',
    summary: 'deny request N (or every pending one) on the running broker (deny N|all)',
    usage: 'broker deny N|all [--config FILE] [--json]',
    about:
      'Denies pending request N, or every pending request with "all". Audited with actor "socket".',
    example: 'broker deny 4',
    min: 1,
    max: 1,
    request: (p) => ({ op: 'command', text: ['deny', ...p].join(' ') }),
  },
  {
    name: 'revoke',
    summary: 'end grants on the running broker (revoke N|INSTANCE|all)',
    usage: 'broker revoke N|INSTANCE|all [--config FILE] [--json]',
    about: `Ends the grants of request N, every grant on instance INSTANCE, or every grant.
Transfers using them stop and checkout locks are released. Audited with actor "socket".`,
    example: 'broker revoke all',
    min: 1,
    max: 1,
    request: (p) => ({ op: 'command', text: ['revoke', ...p].join(' ') }),
  },
  {
    name: 'show',
    summary: 'request N in full on the running broker: its reason, every item, its state',
    usage: 'broker show N [--config FILE] [--json]',
    about: `Shows request N as typing "show N" on the approval console does: who asked, the
reason, every item (numbered, for "approve N ITEMS"), and what was decided or granted.
Read-only: it changes nothing and is not a decision.`,
    example: 'broker show 3',
    min: 1,
    max: 1,
    request: (p) => ({ op: 'command', text: ['show', ...p].join(' ') }),
  },
  {
    name: 'status',
    summary: 'active grants and pending requests of the running broker',
    usage: 'broker status [--config FILE] [--json]',
    about: 'What the console\'s "status" shows: active grants, checkout locks, pending requests.',
    example: 'broker status --json',
    min: 0,
    max: 0,
    request: () => ({ op: 'status' }),
  },
  {
    name: 'grants',
    summary: "the running broker's active grants as a table (request, path, expiry)",
    usage: 'broker grants [--config FILE] [--json]',
    about: `The active grants, one row each: request, instance, path, mode, time left, and when
an operation last relied on it (since the broker started; "–": not yet).`,
    example: 'broker grants',
    min: 0,
    max: 0,
    request: () => ({ op: 'grants' }),
    human: (r, now) => grantsTable(r.grants ?? [], now),
  },
];

/**
 * Finds the running broker through the configuration (owner-target.ts) and asks it
 * `request` over its owner socket: its answer, or the exit code `fail` gave after saying
 * why not (1: no configuration found; 2: no broker running, or an unsafe socket).
 */
export async function askRunningBroker(
  io: Pick<OwnerIo, 'cwd' | 'env'>,
  config: unknown,
  request: OwnerRequest,
  fail: (code: number, error: string, nextStep: string) => number,
  options: { timeoutMs?: number } = {},
): Promise<OwnerResponse | number> {
  const found = await ownerDataDir(
    io.cwd(),
    io.env,
    typeof config === 'string' ? config : undefined,
  );
  if (!found.ok) return fail(ExitCode.usage, found.error, found.nextStep);
  const { askOwner } = await import('../../broker/approval/owner/client.js');
  const { OwnerSocketError } = await import('../../broker/approval/owner/safety.js');
  try {
    return await askOwner(found.dir, request, options);
  } catch (err) {
    if (err instanceof OwnerSocketError)
      return fail(ExitCode.infrastructure, err.message, err.nextStep);
    throw err;
  }
}

export function ownerCommand(spec: Spec, io: OwnerIo): Command {
  const who = `broker ${spec.name}`;
  const fail = (json: boolean, code: number, error: string, nextStep: string): number => {
    if (json) io.stdout(jsonLine({ status: 'failed', error, next_step: nextStep }));
    io.stderr(`${who}: ${forTerminal(error)}\n  next: ${forTerminal(nextStep)}\n`);
    return code;
  };
  return {
    name: spec.name,
    summary: spec.summary,
    help: helpOf(spec),
    async run(args) {
      const parsed = parseCommandArgs(
        args,
        { config: { type: 'string' }, json: { type: 'boolean' } },
        true,
      );
      const json = args.includes('--json');
      const usageNext = `run \`${who} --help\``;
      if (!parsed.ok) {
        const error = describeProblem(parsed.problem, '--config needs a file');
        return fail(json, ExitCode.usage, error, usageNext);
      }
      const { positionals } = parsed;
      if (positionals.length < spec.min || positionals.length > spec.max) {
        return fail(json, ExitCode.usage, `usage: ${spec.usage}`, usageNext);
      }
      const response = await askRunningBroker(
        io,
        parsed.values.config,
        spec.request(positionals),
        (code, error, nextStep) => fail(json, code, error, nextStep),
      );
      if (typeof response === 'number') return response;
      if (!response.ok) return fail(json, ExitCode.usage, response.error, response.next_step);
      const { ok: _ok, text, refused, ...rest } = response;
      if (json) {
        io.stdout(
          jsonLine({
            status: refused === true ? 'refused' : 'ok',
            ...(text === '' ? {} : { message: text }),
            ...rest,
          }),
        );
      } else {
        // Security: agent text in the answer is escaped already; each line is escaped
        // again so no control character reaches the owner's terminal.
        const human = (spec.human?.(response, io.now()) ?? text).replace(/\n$/, '');
        io.stdout(`${human.split('\n').map(forTerminal).join('\n')}\n`);
      }
      return refused === true ? ExitCode.refused : ExitCode.ok;
    },
  };
}

export function createOwnerCommands(io: OwnerIo): Command[] {
  return SPECS.map((spec) => ownerCommand(spec, io));
}

/** The owner commands' io in a real process. */
export const processOwnerIo: OwnerIo = {
  env: process.env,
  cwd: () => process.cwd(),
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  now: Date.now,
};

export const ownerSocketCommands: readonly Command[] = createOwnerCommands(processOwnerIo);
