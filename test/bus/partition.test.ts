import { expect } from "chai";
import kafkajs from "kafkajs";
import { murmur2, partitionForKey } from "../../src/bus/partition.js";

describe("bus partitioning", () => {
  // Values printed by org.apache.kafka.common.utils.Utils.murmur2 from the kafka-clients 3.9.1 jar.
  const javaVectors: [string, number, number][] = [
    ["21", -973932308, 3],
    ["foobar", -790332482, 0],
    ["a-little-bit-long-string", -985981536, 1],
    ["a-little-bit-longer-string", -1486304829, 0],
    ["lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971, 3],
    ["abc", 479470107, 4],
    ["", 275646681, 2],
    ["dc_ab12cd34", -1819063982, 1],
    ["émetteur-ü", 1174497606, 2],
  ];

  it("hashes keys exactly like Kafka's Java client", () => {
    for (const [key, hash, partitionOf7] of javaVectors) {
      expect(murmur2(Buffer.from(key, "utf8")), key).to.equal(hash);
      expect(partitionForKey(key, 7), key).to.equal(partitionOf7);
    }
  });

  it("agrees with kafkajs's default partitioner for every key length", () => {
    const kafkajsPartition = kafkajs.Partitioners.DefaultPartitioner();
    const partitionMetadata = Array.from({ length: 12 }, (_, partitionId) => ({
      partitionId,
      partitionErrorCode: 0,
      leader: 1,
      replicas: [1],
      isr: [1],
    }));
    for (let i = 0; i < 500; i++) {
      const key = `source-${"x".repeat(i % 9)}${i}`;
      const expected = kafkajsPartition({ topic: "t", partitionMetadata, message: { key, value: null } });
      expect(partitionForKey(key, 12), key).to.equal(expected);
    }
  });

  it("rejects a partition count that is not a positive integer", () => {
    expect(() => partitionForKey("k", 0)).to.throw(RangeError);
    expect(() => partitionForKey("k", 1.5)).to.throw(RangeError);
  });
});
