/** `tokens.metrics`: optional (absent turns GET /metrics off), else a token like the others. */
import { describe, expect, it } from 'vitest';
import { configSecrets } from '../../broker/config.js';
import { AGENT, APP, BOT, TRANSFER, configError, ctx, parseRaw, withValue } from './helpers.js';

const METRICS = 'metrics-token-0123456789abcdef0123456789abcd';

describe('tokens.metrics', () => {
  it('is absent by default, and then no secret of the broker', () => {
    const { config } = parseRaw(withValue('tokens.metrics', undefined));
    expect(config.tokens.metrics).toBeUndefined();
    expect(configSecrets(config)).toEqual([AGENT, TRANSFER, BOT, APP]);
  });

  it('is read inline or from the environment, and scrubbed like every secret', () => {
    expect(parseRaw(withValue('tokens.metrics', METRICS)).config.tokens.metrics).toBe(METRICS);
    const fromEnv = parseRaw(
      withValue('tokens.metrics_env', 'BROKER_METRICS'),
      ctx({ env: { BROKER_METRICS: METRICS } }),
    ).config;
    expect(fromEnv.tokens.metrics).toBe(METRICS);
    expect(configSecrets(fromEnv)).toContain(METRICS);
  });

  it.each([
    ['too short', 'short-metrics-token', /tokens\.metrics: must be at least 32 characters/],
    [
      'the agent token',
      AGENT,
      /tokens\.metrics: must differ from tokens\.agent and tokens\.transfer/,
    ],
    ['the transfer token', TRANSFER, /tokens\.metrics: must differ/],
  ])('refuses %s', (_what, value, why) => {
    expect(configError(withValue('tokens.metrics', value)).message).toMatch(why);
  });

  it('refuses an unset environment variable, naming the key', () => {
    expect(configError(withValue('tokens.metrics_env', 'NOT_SET_HERE')).message).toMatch(
      /tokens\.metrics_env: environment variable NOT_SET_HERE is not set/,
    );
  });
});
