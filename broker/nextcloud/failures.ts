/**
 * How a failed exchange reads, for the connection (connection.ts): the message and the
 * exception class of a Sabre error body, and a transport failure (stopped, timed out,
 * cut, unreachable) as a NextcloudError whose message names the cause and the next step.
 * The connection scrubs every error before it leaves.
 */
import { CONTROL_OR_LINE_SEPARATOR, replaceRuns } from '../base/text.js';
import { NextcloudError, type Verb } from './errors.js';
import type { TransportError } from './http.js';

/** The first `<s:message>` of a Sabre error body, reduced to one short printable line. */
export function sabreMessage(body: string): string | undefined {
  const m = /<(?:[\w-]+:)?message\b[^>]*>([\s\S]*?)<\/(?:[\w-]+:)?message>/.exec(body);
  if (!m || m[1] === undefined) return undefined;
  const decoded = m[1]
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&apos;/g, "'")
    .replace(/&amp;/g, '&');
  const text = replaceRuns(decoded, CONTROL_OR_LINE_SEPARATOR, ' ').replace(/\s+/g, ' ').trim();
  if (text === '') return undefined;
  return text.length > 160 ? `${text.slice(0, 157)}...` : text;
}

/** The `<s:exception>` class of a Sabre error body, if it is plainly one. */
export function sabreException(body: string): string | undefined {
  const m = /<(?:[\w-]+:)?exception\b[^>]*>([\w\\]{1,200})<\/(?:[\w-]+:)?exception>/.exec(body);
  return m?.[1];
}

/** After a lost answer, a change may still have happened: say so for non-idempotent verbs. */
function nextStepAfterLostAnswer(verb: Verb): string {
  return verb === 'PROPFIND' ||
    verb === 'SEARCH' ||
    verb === 'GET' ||
    verb === 'REPORT' ||
    verb === 'CAPABILITIES' ||
    verb === 'SPACE'
    ? 'try again later'
    : 'the change may still have been made, so look (list) before trying again';
}

/** The request was stopped by the caller's signal (the operation's grant ended). */
export function cancelledError(instance: string, verb: Verb, path: string): NextcloudError {
  return new NextcloudError(
    'cancelled',
    `the broker stopped ${verb} '${path}' on instance '${instance}': the operation was cancelled`,
  );
}

/** What a failed exchange was: the instance, its timeout, the verb and the path. */
export interface Exchange {
  readonly instance: string;
  readonly timeoutMs: number;
  readonly verb: Verb;
  readonly path: string;
}

export function timeoutError({ instance, timeoutMs, verb, path }: Exchange): NextcloudError {
  return new NextcloudError(
    'timeout',
    `Nextcloud on instance '${instance}' did not answer ${verb} '${path}' within ${Math.round(timeoutMs / 1000)} s: ${nextStepAfterLostAnswer(verb)}`,
  );
}

/** A failure of the transport (http.ts) as the NextcloudError that names its cause. */
export function transportFailure(err: TransportError, exchange: Exchange): NextcloudError {
  const { instance, verb, path } = exchange;
  switch (err.code) {
    case 'cancelled':
      return cancelledError(instance, verb, path);
    case 'timeout':
      return timeoutError(exchange);
    case 'body':
      if (verb === 'PUT')
        return new NextcloudError(
          'aborted',
          `the upload of '${path}' to instance '${instance}' was cut short (${err.detail}): nothing was replaced; run the same command again`,
        );
      return new NextcloudError(
        'bad_response',
        `Nextcloud sent too large a reply to ${verb} '${path}' on instance '${instance}': list a smaller folder`,
      );
    default:
      return new NextcloudError(
        'unreachable',
        `cannot reach Nextcloud for instance '${instance}' (${err.detail}): check that the server is up; ${nextStepAfterLostAnswer(verb)}`,
      );
  }
}
