/**
 * Who the instance's account is on its Nextcloud (`GET /ocs/v2.php/cloud/user`): its id,
 * its groups (`admin` is Nextcloud's administrators) and the groups it is a sub-admin of.
 * `broker doctor` reads it: the broker's account should be neither
 * (docs/nextcloud-behaviour.md "The account").
 */
import { z } from 'zod';
import { getOcsJson, ocsJsonOf } from './capabilities.js';
import { NextcloudError } from './errors.js';
import type { Session } from './session.js';

export interface AccountFacts {
  readonly id: string;
  readonly groups: readonly string[];
  /** Groups whose users this account administers. */
  readonly subadmin: readonly string[];
}

const UserSchema = z.object({
  ocs: z.object({
    data: z.object({
      id: z.string(),
      groups: z.array(z.string()),
      subadmin: z.array(z.string()).optional(),
    }),
  }),
});

export async function readAccount(
  { conn }: Pick<Session, 'conn'>,
  signal?: AbortSignal,
): Promise<AccountFacts> {
  const text = await getOcsJson(conn, 'cloud/user', 'SPACE', signal);
  const parsed = ocsJsonOf(text, UserSchema);
  if (parsed === undefined)
    throw new NextcloudError(
      'bad_response',
      `Nextcloud sent account facts the broker cannot read on instance '${conn.name}'`,
    );
  const { id, groups, subadmin } = parsed.ocs.data;
  return { id, groups, subadmin: subadmin ?? [] };
}
