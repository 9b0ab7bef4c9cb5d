/**
 * The Kafka appender's sends, against a producer that records them: no send above the byte
 * budget (Kafka refuses a record batch above the topic's max.message.bytes, and with it every
 * append of that send), call order kept across sends, an append split over sends settles once.
 */
import { describe, expect, it } from 'vitest';
import type { Producer, ProducerBatch, RecordMetadata } from 'kafkajs';
import { KafkaAppender } from '../../../src/adapters/event-log/kafka-appender.js';
import { recordBytes } from '../../../src/adapters/kafka/record-batches.js';
import type { KafkaOutMessage } from '../../../src/adapters/event-log/kafka-record.js';

interface Send {
  values: string[];
  bytes: number;
}

/** A producer whose sends succeed (or fail when `fail` says so) on the next macrotask. */
function recordingProducer(fail: (send: Send) => boolean = () => false) {
  const sends: Send[] = [];
  const offsets = new Map<string, number>();
  const producer = {
    sendBatch: async (batch: ProducerBatch): Promise<RecordMetadata[]> => {
      const values: string[] = [];
      let bytes = 0;
      const metadata: RecordMetadata[] = [];
      for (const t of batch.topicMessages ?? []) {
        for (const m of t.messages) {
          values.push((m.value as Buffer).toString().slice(0, 12));
          bytes += recordBytes(m as unknown as KafkaOutMessage);
        }
        const key = `${t.topic}/0`;
        const base = offsets.get(key) ?? 0;
        offsets.set(key, base + t.messages.length);
        metadata.push({ topicName: t.topic, partition: 0, errorCode: 0, baseOffset: String(base) } as RecordMetadata);
      }
      const send = { values, bytes };
      sends.push(send);
      await new Promise((r) => setTimeout(r, 1));
      if (fail(send)) throw new Error('The request included a message larger than the max message size the server will accept');
      return metadata;
    },
  } as unknown as Producer;
  return { producer, sends };
}

const message = (name: string, size: number): KafkaOutMessage => ({
  value: Buffer.from(name.padEnd(size, '.')),
  timestamp: '1700000000000',
  headers: { 'Content-Type': 'application/json' },
});

describe('KafkaAppender', () => {
  it('splits what is queued into sends within the byte budget, in call order', async () => {
    const { producer, sends } = recordingProducer();
    const acked: number[] = [];
    const appender = new KafkaAppender(producer, (_t, _p, head) => acked.push(head), { maxBatchBytes: 10_000 });
    const one = Promise.resolve(1);
    const appends = Array.from({ length: 20 }, (_, i) => appender.append('t', [message(`m${i}`, 2_000)], one));
    await Promise.all(appends);
    expect(sends.length).toBeGreaterThan(4);
    for (const s of sends) expect(s.bytes).toBeLessThanOrEqual(10_000);
    expect(sends.flatMap((s) => s.values.map((v) => v.replace(/\.+$/, '')))).toEqual(Array.from({ length: 20 }, (_, i) => `m${i}`));
    expect(acked.at(-1)).toBe(20);
  });

  it('splits one append larger than the budget over sends and resolves it when the last part is in', async () => {
    const { producer, sends } = recordingProducer();
    const appender = new KafkaAppender(producer, () => undefined, { maxBatchBytes: 10_000 });
    const one = Promise.resolve(1);
    let bigDone = false;
    const big = appender.append('t', Array.from({ length: 12 }, (_, i) => message(`b${i}`, 2_000)), one).then(() => (bigDone = true));
    const after = appender.append('t', [message('after', 100)], one).then(() => bigDone);
    expect(await after).toBe(true);
    await big;
    expect(sends.length).toBe(3);
    expect(sends.flatMap((s) => s.values.map((v) => v.replace(/\.+$/, '')))).toEqual([...Array.from({ length: 12 }, (_, i) => `b${i}`), 'after']);
  });

  it('sends a record larger than the budget alone', async () => {
    const { producer, sends } = recordingProducer();
    const appender = new KafkaAppender(producer, () => undefined, { maxBatchBytes: 10_000 });
    const one = Promise.resolve(1);
    await Promise.all([appender.append('t', [message('s1', 100)], one), appender.append('t', [message('huge', 50_000)], one), appender.append('t', [message('s2', 100)], one)]);
    expect(sends.map((s) => s.values.map((v) => v.replace(/\.+$/, '')))).toEqual([['s1'], ['huge'], ['s2']]);
  });

  it('fails an append whose part was refused, sends none of its rest, and goes on with the next', async () => {
    const { producer, sends } = recordingProducer((s) => s.values.some((v) => v.startsWith('b1.')));
    const appender = new KafkaAppender(producer, () => undefined, { maxBatchBytes: 5_000 });
    const one = Promise.resolve(1);
    const big = appender.append('t', Array.from({ length: 6 }, (_, i) => message(`b${i}`, 2_000)), one);
    const next = appender.append('t', [message('next', 100)], one);
    await expect(big).rejects.toThrow(/Kafka refused the records: .*max message size/);
    await expect(next).resolves.toBeUndefined();
    const sent = sends.flatMap((s) => s.values.map((v) => v.replace(/\.+$/, '')));
    expect(sent).toEqual(['b0', 'b1', 'next']);
    // Its bytes are released: a close finds nothing left.
    await appender.close();
  });
});
