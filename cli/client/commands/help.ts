/** Help text shared by the client commands (fetch, push, checkout, checkin). */
export const LOCAL_HELP = `LOCAL (optional) is a file path, e.g. any local_path an earlier command printed,
or a folder (existing, or ending in /) that receives the remote file name. Without
it, fetch and checkout stage at <staging folder>/<instance>/<path>, and push and
checkin upload the file from where it was last staged.`;

export const CLIENT_ENV_HELP = `Environment:
  BROKER_URL             the broker, e.g. http://10.8.0.1:8765 (required)
  BROKER_TRANSFER_TOKEN  tokens.transfer from the broker's config (required)
  BROKER_STAGE_DIR       staging folder (default: $XDG_DATA_HOME/broker/stage,
                         i.e. ~/.local/share/broker/stage/<instance>/<path>)
  BROKER_STATE_DIR       the CLI's records of what it staged, private (default:
                         the staging folder with .state added, beside it)

Output: one JSON object on stdout (status, local_path, sha256, size, etag; on failure
error and next_step), usage errors included; messages and progress on stderr.`;

export const EXIT_CODES_HELP = `Exit codes:
  0 ok   1 local or usage error   2 broker, Nextcloud or network failure (retry later)
  3 refused by the wall (request access; never retry as is)
  4 verification failure (treat as corrupt)   5 clobber refused`;
