import { describe, expect, it } from 'vitest';
import { measureApprovalLatency } from './latency.js';

describe('measureApprovalLatency (for bench/approval.bench.ts)', () => {
  it('measures 👍 → grant active and the chat-delivery baseline, one value per sample', async () => {
    const r = await measureApprovalLatency({ samples: 3 });
    expect(r.approvalMs).toHaveLength(3);
    expect(r.deliveryMs).toHaveLength(3);
    for (const ms of [...r.approvalMs, ...r.deliveryMs]) {
      expect(ms).toBeGreaterThan(0);
      expect(ms).toBeLessThan(5_000);
    }
  });
});
