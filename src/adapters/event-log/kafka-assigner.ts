/**
 * Cluster mode's split of a topic's partitions between nodes. Each partition of a source topic
 * is read by its own consumer group (one member per node that claims it), and this assigner
 * gives that one partition to one member: the member chosen by (hash of the topic + partition)
 * modulo the number of members, in the order of the nodes' ids (sent as the members' user data).
 * So the partitions of a topic, and the topics of single partitions, spread over the nodes
 * rather than all landing on the same one, and the choice only changes when nodes come or go.
 *
 * kafkajs has no manual partition assignment; a group per partition with this assigner is how
 * a reader gets exactly its partition.
 */
import { AssignerProtocol, type Assigner, type PartitionAssigner } from 'kafkajs';

const NAME = 'SluiceOnePartition';
const VERSION = 1;

export function onePartitionAssigner(topic: string, partition: number, nodeId: string): PartitionAssigner {
  return (): Assigner => ({
    name: NAME,
    version: VERSION,
    protocol: ({ topics }) => ({
      name: NAME,
      metadata: AssignerProtocol.MemberMetadata.encode({ version: VERSION, topics, userData: Buffer.from(nodeId) }),
    }),
    assign: async ({ members }) => {
      const ordered = members
        .map((m) => ({ memberId: m.memberId, node: AssignerProtocol.MemberMetadata.decode(m.memberMetadata)?.userData.toString() ?? '' }))
        .sort((a, b) => (a.node === b.node ? compare(a.memberId, b.memberId) : compare(a.node, b.node)));
      const chosen = ordered.length === 0 ? -1 : (hash(topic) + partition) % ordered.length;
      return ordered.map((m, i) => ({
        memberId: m.memberId,
        memberAssignment: AssignerProtocol.MemberAssignment.encode({
          version: VERSION,
          assignment: i === chosen ? { [topic]: [partition] } : {},
          userData: Buffer.alloc(0),
        }),
      }));
    },
  });
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** A small stable string hash (FNV-1a), so that topics spread differently over the nodes. */
function hash(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}
