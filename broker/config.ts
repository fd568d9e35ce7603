/**
 * Configuration: the zod schema for config.yaml (docs/contracts.md §7), secret indirection
 * (`<key>`, `<key>_file`, `<key>_env`), and load errors that name the key and the fix.
 * The implementation lives in broker/config/; this is the entry other modules import.
 */
export { ConfigError, type ConfigErrorCode, type ConfigIssue } from './config/errors.js';
export { formatDuration, parseDuration, tryParseDuration } from './config/duration.js';
export { configSecrets, loadConfig, parseConfig } from './config/parse.js';
export { dataDirOf } from './config/data-dir.js';
export { MIN_TOKEN_LENGTH, parsePin } from './config/resolve.js';
export { checkServiceUrl, LOOPBACK_HOSTS } from './config/urls.js';
export type {
  BrokerConfig,
  ConfigContext,
  InstanceConfig,
  MatrixConfig,
  PinnedDevice,
  ParsedConfig,
} from './config/types.js';
