/**
 * The transfer tools as broker/base/transfer-tools.ts declares them, held to the broker's
 * zod schemas both ways: at compile time (the `Expect<Equal<…>>` lines below fail `tsc`
 * when a schema and the declaration drift, either way), and at run time (the registered
 * tools, their schemas' fields, and the codes their refusals actually carry).
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { z } from 'zod';
import type {
  TransferAnswer,
  TransferArgs,
  TransferCode,
  TransferToolName,
} from '../../broker/base/transfer-tools.js';
import { ListInputSchema, ListOutputSchema } from '../../broker/surfaces/listing.js';
import { envelopeBaseShape } from '../../broker/surfaces/schemas.js';
import {
  TransferCheckAccessInputSchema,
  TransferCheckAccessOutputSchema,
} from '../../broker/surfaces/transfer/check-access.js';
import { CheckinInputSchema, CheckinOutputSchema } from '../../broker/surfaces/transfer/checkin.js';
import {
  CheckoutInputSchema,
  CheckoutOutputSchema,
} from '../../broker/surfaces/transfer/checkout.js';
import { transferTools, type TransferToolDeps } from '../../broker/surfaces/transfer/index.js';
import { ReadInputSchema, ReadOutputSchema } from '../../broker/surfaces/transfer/read.js';
import { WriteInputSchema, WriteOutputSchema } from '../../broker/surfaces/transfer/write.js';
import { startBroker, type Broker } from '../../support/daemon.js';
import { call } from '../../support/mcp.js';

/** Each tool's zod schemas, by the declared name. */
const SCHEMAS = {
  check_access: {
    input: TransferCheckAccessInputSchema,
    output: TransferCheckAccessOutputSchema,
  },
  list: { input: ListInputSchema, output: ListOutputSchema },
  read: { input: ReadInputSchema, output: ReadOutputSchema },
  write: { input: WriteInputSchema, output: WriteOutputSchema },
  checkout: { input: CheckoutInputSchema, output: CheckoutOutputSchema },
  checkin: { input: CheckinInputSchema, output: CheckinOutputSchema },
} satisfies Record<TransferToolName, { input: z.ZodObject; output: z.ZodObject }>;
type Schemas = typeof SCHEMAS;

// ---- compile time: each schema is the declaration, both ways -------------------------

type Equal<A, B> =
  (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
type Expect<T extends true> = T;
type Simplify<T> = { [K in keyof T]: T[K] } & {};
/** Every field of every variant of `T`, optional, with the union of its types. */
type Loose<T> = Simplify<{
  [K in T extends unknown ? keyof T : never]?: T extends unknown
    ? K extends keyof T
      ? T[K]
      : never
    : never;
}>;
type BaseKey = keyof typeof envelopeBaseShape;
/** A tool's own answer fields in its output schema (the envelope's are everyone's). */
type SchemaAnswer<N extends TransferToolName> = Loose<
  Omit<z.output<Schemas[N]['output']>, BaseKey>
>;
type SchemaArgs<N extends TransferToolName> = Simplify<z.input<Schemas[N]['input']>>;

export type ArgsAsDeclared = [
  Expect<Equal<SchemaArgs<'check_access'>, Simplify<TransferArgs<'check_access'>>>>,
  Expect<Equal<SchemaArgs<'list'>, Simplify<TransferArgs<'list'>>>>,
  Expect<Equal<SchemaArgs<'read'>, Simplify<TransferArgs<'read'>>>>,
  Expect<Equal<SchemaArgs<'write'>, Simplify<TransferArgs<'write'>>>>,
  Expect<Equal<SchemaArgs<'checkout'>, Simplify<TransferArgs<'checkout'>>>>,
  Expect<Equal<SchemaArgs<'checkin'>, Simplify<TransferArgs<'checkin'>>>>,
];
export type AnswersAsDeclared = [
  Expect<Equal<SchemaAnswer<'check_access'>, Loose<TransferAnswer<'check_access'>>>>,
  Expect<Equal<SchemaAnswer<'list'>, Loose<TransferAnswer<'list'>>>>,
  Expect<Equal<SchemaAnswer<'read'>, Loose<TransferAnswer<'read'>>>>,
  Expect<Equal<SchemaAnswer<'write'>, Loose<TransferAnswer<'write'>>>>,
  Expect<Equal<SchemaAnswer<'checkout'>, Loose<TransferAnswer<'checkout'>>>>,
  Expect<Equal<SchemaAnswer<'checkin'>, Loose<TransferAnswer<'checkin'>>>>,
];

/** Every field of `T` given (a sample naming each declared field once). */
type Complete<T> = { [K in keyof Loose<T>]-?: Exclude<Loose<T>[K], undefined> };

const TICKET = {
  ticket: 't',
  blob_url: '/transfer/blobs/t',
  expires_at: '2026-01-01T00:00:00.000Z',
  expires_in_s: 60,
} as const;

/** One sample per tool naming every declared argument and answer field. */
const FULL: {
  [N in TransferToolName]: { args: Complete<TransferArgs<N>>; answer: Complete<TransferAnswer<N>> };
} = {
  check_access: {
    args: { instance: 'i', path: 'p', mode: 'read' },
    answer: { path: 'p', mode: 'read', expires_at: TICKET.expires_at },
  },
  list: {
    args: { instance: 'i', path: 'p', cursor: 'c' },
    answer: { path: 'p', discovery: false, entries: [{ name: 'a', kind: 'file' }] },
  },
  read: {
    args: { instance: 'i', path: 'p' },
    answer: {
      path: 'p',
      size: null,
      etag: null,
      ...TICKET,
      sha256_header: 'x-broker-sha256',
      sha256_at_end: 'x-broker-sha256-at-end',
    },
  },
  write: {
    args: {
      instance: 'i',
      path: 'p',
      size: 1,
      if_match: '"e"',
      if_none_match: '*',
      lock_token: 'l',
      sha256: 'a'.repeat(64),
    },
    answer: {
      path: 'p',
      size: 1,
      etag: null,
      ...TICKET,
      sha256_header: 'x-broker-sha256',
      sha256_at_end: 'x-broker-sha256-at-end',
    },
  },
  checkout: {
    args: { instance: 'i', path: 'p', timeout_s: 60 },
    answer: {
      path: 'p',
      lock_token: 'l',
      lock_expires_at: TICKET.expires_at,
      size: 1,
      etag: '"e"',
      ...TICKET,
      sha256_header: 'x-broker-sha256',
      sha256_at_end: 'x-broker-sha256-at-end',
    },
  },
  checkin: {
    args: {
      instance: 'i',
      path: 'p',
      lock_token: 'l',
      size: 1,
      sha256: 'a'.repeat(64),
      abandon: false,
    },
    answer: {
      path: 'p',
      size: 1,
      unlocked: true,
      etag: null,
      ...TICKET,
      sha256_header: 'x-broker-sha256',
      sha256_at_end: 'x-broker-sha256-at-end',
    },
  },
};

/** An answer each tool really gives, per variant: each parses with its output schema. */
const ANSWERS: { [N in TransferToolName]: readonly TransferAnswer<N>[] } = {
  check_access: [{ path: 'p', mode: 'write' }],
  list: [{ path: '', discovery: true, entries: [{ name: 'a', kind: 'folder' }] }],
  read: [{ path: 'p', size: null, etag: null, ...TICKET }],
  write: [
    {
      path: 'p',
      size: 3,
      ...TICKET,
      sha256_header: 'x-broker-sha256',
      sha256_at_end: 'x-broker-sha256-at-end',
    },
  ],
  checkout: [
    { path: 'p', lock_token: 'l', lock_expires_at: 'x', size: null, etag: null, ...TICKET },
  ],
  checkin: [
    { path: 'p', unlocked: true, etag: '"e"' },
    {
      path: 'p',
      size: 3,
      ...TICKET,
      sha256_header: 'x-broker-sha256',
      sha256_at_end: 'x-broker-sha256-at-end',
    },
  ],
};

/**
 * Each tool's codes as a list, equal to its declared union (compile time), so a code the
 * broker answers at run time can be looked up.
 */
const PIPELINE = [
  'invalid_arguments',
  'secret_in_arguments',
  'rate_limited',
  'internal',
  'invalid_path',
  'unknown_instance',
  'no_grant',
  'grant_revoked',
  'grant_expired',
  'audit_unavailable',
] as const;
const NEXTCLOUD = [
  'invalid_path',
  'invalid_arguments',
  'permission',
  'not_found',
  'conflict',
  'locking_unavailable',
  'lock_token_unknown',
  'locked',
  'not_a_file',
  'not_a_folder',
  'nextcloud_auth',
  'insufficient_storage',
  'nextcloud_unavailable',
  'nextcloud_error',
  'aborted',
  'verification_failed',
] as const;
const CODES = {
  check_access: PIPELINE.filter((c) => c !== 'audit_unavailable') as readonly Exclude<
    (typeof PIPELINE)[number],
    'audit_unavailable'
  >[],
  list: [...PIPELINE, ...NEXTCLOUD],
  read: PIPELINE,
  write: [...PIPELINE, ...NEXTCLOUD, 'insufficient_space'],
  checkout: [...PIPELINE, ...NEXTCLOUD],
  checkin: [...PIPELINE, ...NEXTCLOUD, 'insufficient_space'],
} as const;
export type CodesAsDeclared = [
  Expect<Equal<(typeof CODES)['check_access'][number], TransferCode<'check_access'>>>,
  Expect<Equal<(typeof CODES)['list'][number], TransferCode<'list'>>>,
  Expect<Equal<(typeof CODES)['read'][number], TransferCode<'read'>>>,
  Expect<Equal<(typeof CODES)['write'][number], TransferCode<'write'>>>,
  Expect<Equal<(typeof CODES)['checkout'][number], TransferCode<'checkout'>>>,
  Expect<Equal<(typeof CODES)['checkin'][number], TransferCode<'checkin'>>>,
];

const NAMES = Object.keys(SCHEMAS) as TransferToolName[];
const sorted = (keys: Iterable<string>): string[] => [...keys].sort();

// ---- run time -----------------------------------------------------------------------

describe('the transfer surface registers exactly the declared tools, with their schemas', () => {
  const registry = transferTools({} as TransferToolDeps);

  it('one tool per declared name, and no other', () => {
    expect(sorted(registry.all().map((t) => t.name))).toEqual(sorted(NAMES));
    for (const name of NAMES) {
      expect(registry.get(name)?.input).toBe(SCHEMAS[name].input);
      expect(registry.get(name)?.output).toBe(SCHEMAS[name].output);
    }
  });

  it.each(NAMES)(
    '%s: the schema has every declared argument and answer field, and no other',
    (name) => {
      const { input, output } = SCHEMAS[name];
      expect(sorted(Object.keys(input.shape))).toEqual(sorted(Object.keys(FULL[name].args)));
      const own = Object.keys(output.shape).filter((k) => !(k in envelopeBaseShape));
      expect(sorted(own)).toEqual(sorted(Object.keys(FULL[name].answer)));
    },
  );

  it.each(NAMES)('%s: each declared kind of answer is valid output', (name) => {
    for (const answer of ANSWERS[name]) {
      expect(
        SCHEMAS[name].output.safeParse({ status: 'ok', message: 'm', ...answer }).success,
      ).toBe(true);
    }
  });
});

describe('a transfer tool refuses only with the codes it declares', () => {
  let broker: Broker;
  let transfer: Client;
  beforeAll(async () => {
    broker = await startBroker();
    transfer = await broker.transfer();
    await broker.fake.writeFile('Proto/file.txt', Buffer.from('x'));
    await broker.fake.writeFile('Proto/dir/inner.txt', Buffer.from('y'));
    await broker.grant([{ path: 'Proto', mode: 'write' }]);
  });
  afterAll(async () => {
    await broker.close();
  });

  const where = { instance: 'personal', path: 'Proto/file.txt' };
  /** Calls that each tool refuses, for its own reasons and the wall's. */
  const REFUSED: { [N in TransferToolName]: Record<string, unknown>[] } = {
    check_access: [
      { ...where, mode: 'write', instance: 'nope' },
      { ...where, mode: 'read', path: '../x' },
      { ...where, mode: 'read', path: 'Elsewhere' },
      { ...where },
    ],
    list: [
      { ...where },
      { ...where, path: 'Elsewhere' },
      { ...where, instance: 'nope' },
      { ...where, path: 'Proto', cursor: 'garbage' },
    ],
    read: [{ ...where, path: 'Elsewhere' }, { ...where, path: 'a/../b' }, {}],
    write: [
      { ...where, size: 1, if_none_match: '*' },
      { ...where, path: 'Proto/dir', size: 1, if_match: '"x"' },
      { ...where, size: 1 },
      { ...where, path: 'Elsewhere/f', size: 1, if_none_match: '*' },
    ],
    checkout: [
      { ...where, path: 'Proto/dir' },
      { ...where, path: 'Proto/missing.txt' },
      { ...where, path: 'Elsewhere' },
    ],
    checkin: [
      { ...where, lock_token: 'opaquelocktoken:nobody', abandon: true },
      { ...where, path: 'Proto/dir', lock_token: 'opaquelocktoken:nobody', size: 1 },
      { ...where, lock_token: 'x' },
    ],
  };

  it.each(NAMES)('%s', async (name) => {
    const answered = new Set<string>();
    for (const args of REFUSED[name]) {
      const envelope = await call(transfer, name, args);
      expect(envelope.status, JSON.stringify(envelope)).not.toBe('ok');
      answered.add(String(envelope.code));
    }
    expect(sorted(answered).filter((c) => !(CODES[name] as readonly string[]).includes(c))).toEqual(
      [],
    );
    // The calls above cover more than one code each: the test would notice a new one.
    expect(answered.size).toBeGreaterThan(1);
  });
});
