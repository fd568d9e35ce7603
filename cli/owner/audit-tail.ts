/**
 * `broker audit tail [-n N] [--json] [--follow]`: the newest records of the audit log,
 * for a person (one line each: time, seq, event, the record's fields) or as the stored
 * JSON lines. It reads `<data_dir>/audit.log` directly, not through the owner socket:
 * it then works while the broker is stopped too, and needs what reading the log needs
 * anyway, the broker's user (the log is 0600 in a 0700 folder).
 */
import { closeSync, openSync, readSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { LOG_FILE } from '../../broker/audit/log.js';
import { readEvent } from '../../broker/audit/reading.js';
import { describeProblem, parseCommandArgs } from '../args.js';
import { ExitCode } from '../command.js';
import { forTerminal } from '../terminal.js';
import { auditDataDir } from './owner-target.js';
import type { JsonObject } from '../../broker/base/protocol.js';

export interface AuditTailIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  cwd: () => string;
  env: NodeJS.ProcessEnv;
  /** With --follow: resolves when the command should stop (SIGINT in production). */
  stopped?: () => Promise<void>;
  /** How often --follow looks for new records (default 500 ms). */
  pollMs?: number;
}

export const TAIL_USAGE =
  'broker audit tail [-n N] [--json] [--follow] [--config FILE | --data-dir DIR]';
const DEFAULT_LINES = 20;
const MAX_LINES = 10_000;
const CHUNK = 64 * 1024;
/** Fields every record has; shown in the line's head, not among its fields. */
const HEAD_FIELDS = new Set(['seq', 'ts', 'prev', 'hash', 'event']);
const MAX_VALUE = 80;

/** The last `n` complete lines of `file`, reading backwards from `end` one chunk at a time. */
export function lastLines(file: string, n: number, end: number): string[] {
  const fd = openSync(file, 'r');
  try {
    let start = end;
    let text = '';
    while (start > 0 && text.split('\n').length <= n + 1) {
      const from = Math.max(0, start - CHUNK);
      const buf = Buffer.alloc(start - from);
      readSync(fd, buf, 0, buf.length, from);
      text = buf.toString('utf8') + text;
      start = from;
    }
    const lines = text.split('\n');
    lines.pop(); // after the last newline: empty, or a record still being written
    // The first piece may be cut in the middle unless reading reached the file's start.
    return (start === 0 ? lines : lines.slice(1)).slice(-n);
  } finally {
    closeSync(fd);
  }
}

function shownValue(value: unknown): string {
  const text =
    typeof value === 'string' && /^[^\s"=]+$/.test(value) ? value : JSON.stringify(value);
  return text.length > MAX_VALUE ? `${text.slice(0, MAX_VALUE - 1)}…` : text;
}

/**
 * The event's name, marked when this version does not read it as written: `[unknown
 * event]` (misspelt, or from a newer broker), or the field its schema misses.
 */
function shownEvent(record: JsonObject): string {
  const reading = readEvent(record);
  if (reading.kind === 'known') return reading.event.event;
  const name = reading.name === '' ? '?' : reading.name;
  return reading.kind === 'unknown'
    ? `${name} [unknown event]`
    : `${name} [not as this version writes it: ${reading.problem}]`;
}

/** One record for a person: `2026-12-02 00:18:45  #5 decision request=2 actor=socket …`. */
export function humanRecord(line: string): string {
  let record: unknown;
  try {
    record = JSON.parse(line);
  } catch {
    return forTerminal(`(not a record: ${line.slice(0, MAX_VALUE)})`);
  }
  if (typeof record !== 'object' || record === null || Array.isArray(record))
    return forTerminal(line);
  const r = record as JsonObject;
  const when =
    typeof r['ts'] === 'string' ? r['ts'].replace('T', ' ').replace(/\.\d+Z$/, 'Z') : '?';
  const fields = Object.entries(r)
    .filter(([k]) => !HEAD_FIELDS.has(k))
    .map(([k, v]) => `${k}=${shownValue(v)}`);
  // Security: the log holds agent text (paths, reasons); nothing may act on the terminal.
  return forTerminal(`${when} #${String(r['seq'])} ${shownEvent(r)} ${fields.join(' ')}`.trimEnd());
}

type TailArgs =
  | { ok: true; n: number; json: boolean; follow: boolean; config?: string; dataDir?: string }
  | { ok: false; error: string };

function parseTailArgs(args: readonly string[]): TailArgs {
  const parsed = parseCommandArgs(
    args,
    {
      n: { type: 'string', short: 'n' },
      json: { type: 'boolean' },
      follow: { type: 'boolean', short: 'f' },
      config: { type: 'string' },
      'data-dir': { type: 'string' },
    },
    false,
  );
  if (!parsed.ok)
    return { ok: false, error: describeProblem(parsed.problem, 'an option needs its value') };
  const { values } = parsed;
  const nText = typeof values.n === 'string' ? values.n : String(DEFAULT_LINES);
  if (!/^[1-9][0-9]{0,4}$/.test(nText) || Number(nText) > MAX_LINES) {
    return { ok: false, error: `-n needs a number of records from 1 to ${MAX_LINES}` };
  }
  if (values.config !== undefined && values['data-dir'] !== undefined) {
    return { ok: false, error: 'give --config or --data-dir, not both' };
  }
  return {
    ok: true,
    n: Number(nText),
    json: values.json === true,
    follow: values.follow === true,
    ...(typeof values.config === 'string' ? { config: values.config } : {}),
    ...(typeof values['data-dir'] === 'string' ? { dataDir: values['data-dir'] } : {}),
  };
}

export async function runAuditTail(args: readonly string[], io: AuditTailIo): Promise<number> {
  const fail = (code: number, error: string, nextStep: string): number => {
    io.stderr(`broker audit tail: ${forTerminal(error)}\n  next: ${forTerminal(nextStep)}\n`);
    return code;
  };
  const parsed = parseTailArgs(args);
  if (!parsed.ok) return fail(ExitCode.usage, parsed.error, `usage: ${TAIL_USAGE}`);
  const found = await auditDataDir(io.cwd(), io.env, parsed);
  if (!found.ok) return fail(ExitCode.usage, found.error, `${found.nextStep}; or --data-dir DIR`);
  const dir = found.dir;
  const file = join(dir, LOG_FILE);
  let size: number;
  try {
    size = statSync(file).size;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'unreadable';
    return fail(
      ExitCode.usage,
      `cannot read ${file} (${code})`,
      code === 'ENOENT'
        ? 'the broker has not written an audit log there yet; check --config / --data-dir'
        : "run the command as the broker's user",
    );
  }
  const print = (line: string): void => io.stdout(`${parsed.json ? line : humanRecord(line)}\n`);
  for (const line of lastLines(file, parsed.n, size)) print(line);
  if (!parsed.follow) return ExitCode.ok;
  await follow(file, size, print, io);
  return ExitCode.ok;
}

/** Prints each complete line added to `file` after `offset`, until `io.stopped` resolves. */
async function follow(
  file: string,
  offset: number,
  print: (line: string) => void,
  io: AuditTailIo,
): Promise<void> {
  let at = offset;
  let partial = '';
  let done = false;
  const stopped = (io.stopped?.() ?? new Promise<void>(() => undefined)).then(() => {
    done = true;
  });
  while (!done) {
    const size = statSync(file).size;
    if (size > at) {
      const fd = openSync(file, 'r');
      try {
        const buf = Buffer.alloc(size - at);
        readSync(fd, buf, 0, buf.length, at);
        at = size;
        const lines = (partial + buf.toString('utf8')).split('\n');
        partial = lines.pop() ?? '';
        for (const line of lines) print(line);
      } finally {
        closeSync(fd);
      }
    }
    await Promise.race([stopped, new Promise((r) => setTimeout(r, io.pollMs ?? 500))]);
  }
}
