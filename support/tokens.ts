/** The secrets of the test, benchmark and review brokers (fixed, so a leak is greppable). */
export const AGENT_TOKEN = 'agent-token-0123456789abcdef-0123456789abcdef';
export const TRANSFER_TOKEN = 'transfer-token-0123456789abcdef-0123456789abcd';
export const APP_PASSWORD = 'PlantedSecret-AppPassword-7d1c2b9e';
export const METRICS_TOKEN = 'metrics-token-0123456789abcdef-0123456789abcde';
