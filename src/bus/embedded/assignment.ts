// Which member of a consumer group handles which topic partition: round-robin over the members
// subscribed to each topic, in join order, continuing across topics so load spreads evenly.
import { partitionKey } from "../partition.js";

export interface GroupMemberView {
  readonly id: number;
  readonly topics: ReadonlySet<string>;
}

export function assignPartitions(members: readonly GroupMemberView[], partitionsByTopic: ReadonlyMap<string, number>): Map<string, number> {
  const assignment = new Map<string, number>();
  let turn = 0;
  for (const topic of [...partitionsByTopic.keys()].sort()) {
    const eligible = members.filter((member) => member.topics.has(topic));
    if (eligible.length === 0) continue;
    const partitions = partitionsByTopic.get(topic)!;
    for (let partition = 0; partition < partitions; partition++) {
      assignment.set(partitionKey(topic, partition), eligible[turn % eligible.length].id);
      turn++;
    }
  }
  return assignment;
}
