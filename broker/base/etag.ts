/**
 * What an etag a client hands back may be before it goes into a request header
 * (If-None-Match on a download). Pure; no I/O.
 */

/** Longest etag accepted (Nextcloud's are 34 characters, quotes included). */
export const MAX_ETAG_LENGTH = 200;

/**
 * Whether `value` may go into a header as it is: one strong etag, quoted, of printable
 * ASCII without quotes or spaces inside, at most MAX_ETAG_LENGTH long. Nothing else
 * (a list, `*`, a bare or weak etag, CR/LF) is ever passed on.
 */
export function isQuotedEtag(value: unknown): value is string {
  return (
    typeof value === 'string' &&
    value.length <= MAX_ETAG_LENGTH &&
    /^"[\x21\x23-\x7e]+"$/.test(value)
  );
}

/** The refusal's wording for an etag that is not one (see isQuotedEtag). */
export const ETAG_FORM = `one quoted etag of printable ASCII, at most ${MAX_ETAG_LENGTH} characters`;
