import { describe, expect, it } from 'vitest';
import { newClusterId } from '../../../src/tools/kafka-broker/broker-config.js';

describe('KRaft cluster ids', () => {
  it('are 22 URL-safe base64 characters', () => {
    for (let i = 0; i < 200; i++) expect(newClusterId()).toMatch(/^[A-Za-z0-9_][A-Za-z0-9_-]{21}$/);
  });

  it('never start with "-", which the storage tool would read as an option', () => {
    // 0xf8 as the first byte encodes to "-" first in URL-safe base64.
    const draws = [Buffer.alloc(16, 0xf8), Buffer.alloc(16, 0xf8), Buffer.alloc(16, 0x01)];
    let calls = 0;
    const id = newClusterId(() => draws[calls++]!);
    expect(calls).toBe(3);
    expect(id.startsWith('-')).toBe(false);
    expect(Buffer.alloc(16, 0xf8).toString('base64url').startsWith('-')).toBe(true);
  });
});
