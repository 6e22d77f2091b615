// Key -> partition, identical to Kafka's default partitioner (murmur2 of the UTF-8 key), so
// both adapters and any Java producer put one key on the same partition.

const SEED = 0x9747b28c;
const M = 0x5bd1e995;

/** Kafka's 32-bit murmur2 (org.apache.kafka.common.utils.Utils.murmur2), as a signed int. */
export function murmur2(data: Uint8Array): number {
  const length = data.length;
  let h = (SEED ^ length) | 0;
  const whole = length & ~3;
  for (let i = 0; i < whole; i += 4) {
    let k = data[i] | (data[i + 1] << 8) | (data[i + 2] << 16) | (data[i + 3] << 24);
    k = Math.imul(k, M);
    k ^= k >>> 24;
    k = Math.imul(k, M);
    h = Math.imul(h, M) ^ k;
  }
  // The tail bytes (Java's switch with fall-through).
  const tail = length & 3;
  if (tail === 3) h ^= data[whole + 2] << 16;
  if (tail >= 2) h ^= data[whole + 1] << 8;
  if (tail >= 1) {
    h ^= data[whole];
    h = Math.imul(h, M);
  }
  h ^= h >>> 13;
  h = Math.imul(h, M);
  h ^= h >>> 15;
  return h | 0;
}

export function partitionForKey(key: string, partitions: number): number {
  if (!Number.isInteger(partitions) || partitions < 1) throw new RangeError(`partitions must be a positive integer, got ${partitions}`);
  return (murmur2(Buffer.from(key, "utf8")) & 0x7fffffff) % partitions;
}

/** Map key of one topic partition. */
export function partitionKey(topic: string, partition: number): string {
  return `${partition}:${topic}`;
}
