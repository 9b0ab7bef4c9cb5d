/**
 * Which Kafka topic holds a source's records (pure naming, shared by the
 * configuration defaults, the Kafka event log and the API's views).
 *
 * Naming: `<prefix><projectId>.<branchId>.<sourceId>` (prefix `sluice.` by default), e.g.
 * `sluice.1.1.my-source`. Source ids are lowercase letters, digits and dashes, so the name only
 * uses Kafka's legal characters and never mixes `.` with `_` (Kafka warns that the two collide
 * in metric names). A source can instead be bound to an existing topic (`bindings`, by source
 * id): Sluice then neither creates nor deletes that topic.
 */

export interface KafkaTopicOptions {
  /** Prefix of the topics Sluice creates (default `sluice.`). */
  prefix: string;
  /** Source id -> existing topic the source reads instead of its own. */
  bindings: Record<string, string>;
}

export const DEFAULT_TOPIC_PREFIX = 'sluice.';
/** Kafka's limit of a topic name. */
const MAX_TOPIC_NAME = 249;
const LEGAL = /^[a-zA-Z0-9._-]+$/;

/** The Kafka topic of a source. */
export function kafkaTopicName(options: KafkaTopicOptions, projectId: number, branchId: number, sourceId: string): string {
  return options.bindings[sourceId] ?? `${options.prefix}${projectId}.${branchId}.${sourceId}`;
}

/** The Kafka topic of an event-log topic (`<projectId>.<branchId>.<sourceId>`, see sourceTopic). */
export function kafkaTopicOf(options: KafkaTopicOptions, logTopic: string): { name: string; bound: boolean } {
  const sourceId = logTopic.split('.').slice(2).join('.');
  const bound = options.bindings[sourceId];
  if (bound !== undefined) return { name: bound, bound: true };
  const name = `${options.prefix}${logTopic}`;
  if (name.length > MAX_TOPIC_NAME || !LEGAL.test(name)) throw new Error(`"${name}" is not a legal Kafka topic name`);
  return { name, bound: false };
}

/** `a=topic1,b=topic2` (source id = topic) as a bindings record. */
export function parseTopicBindings(raw: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of raw.split(',').map((p) => p.trim()).filter(Boolean)) {
    const eq = part.indexOf('=');
    const sourceId = part.slice(0, eq).trim();
    const topic = part.slice(eq + 1).trim();
    if (eq <= 0 || !topic || !LEGAL.test(topic) || topic.length > MAX_TOPIC_NAME) {
      throw new Error(`"${part}" is not <sourceId>=<topic> with a legal Kafka topic name`);
    }
    out[sourceId] = topic;
  }
  return out;
}
