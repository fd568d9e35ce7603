import { INSTANCE_NAME } from '../../../broker/base/protocol.js';
import { canonicalPath } from '../../../broker/wall/canonical.js';
import { CliError, usageError } from './errors.js';

/** A remote file named on the command line as `INSTANCE:PATH`. */
export interface RemoteTarget {
  readonly instance: string;
  /** Canonical path, as the broker's wall produces it. */
  readonly path: string;
  readonly components: readonly string[];
}

export function parseTarget(arg: string | undefined): RemoteTarget {
  if (arg === undefined || arg === '') {
    throw usageError(
      'missing INSTANCE:PATH',
      'name the remote file, e.g. `personal:Documents/report.odt`',
    );
  }
  const colon = arg.indexOf(':');
  if (colon <= 0) {
    throw usageError(
      `"${arg}" is not INSTANCE:PATH`,
      'write the instance name, a colon, then the path, e.g. `personal:Documents/report.odt`',
    );
  }
  const instance = arg.slice(0, colon);
  if (!INSTANCE_NAME.test(instance)) {
    throw usageError(
      `"${instance}" is not an instance name ([a-z0-9_-], 1 to 32 characters)`,
      'use a name that `list_instances` shows',
    );
  }
  // Security: every remote component passes the same wall rules as on the broker before it
  // can become part of a local path, so `..`, separators, control and invisible
  // characters never reach the file system here either.
  const canonical = canonicalPath(arg.slice(colon + 1));
  if (!canonical.ok) {
    throw new CliError(
      'refused',
      `path refused: ${canonical.reason}`,
      'fix the path; the broker refuses it as written, so do not retry it as is',
    );
  }
  return { instance, path: canonical.path, components: canonical.path.split('/') };
}
