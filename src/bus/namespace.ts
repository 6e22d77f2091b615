import type { Bus, BusConsumer, ConsumeOptions, OutgoingMessage, TopicSpec } from "./bus.js";

const namespacePattern = /^[A-Za-z0-9_-]{1,100}$/;

/**
 * Several deployments on one Kafka cluster: every topic and consumer group of this bus gets
 * `<namespace>.` in front, and records come back with the names the caller used. Names inside
 * messages (the reply-to header) stay un-prefixed, since every reader goes through the same view.
 */
export function checkNamespace(namespace: string): string {
  if (!namespacePattern.test(namespace))
    throw new RangeError(`bus namespace must match ${namespacePattern}, got ${JSON.stringify(namespace)}`);
  return namespace;
}

export function namespacedBus(bus: Bus, namespace: string): Bus {
  checkNamespace(namespace);
  const prefix = `${namespace}.`;
  const outer = (topic: string) => prefix + topic;
  const inner = (topic: string) => (topic.startsWith(prefix) ? topic.slice(prefix.length) : topic);
  return {
    ensureTopics: (topics: readonly TopicSpec[]) => bus.ensureTopics(topics.map((t) => ({ ...t, name: outer(t.name) }))),
    publish: (topic: string, messages: readonly OutgoingMessage[]) => bus.publish(outer(topic), messages),
    consume: (options: ConsumeOptions): Promise<BusConsumer> => {
      const { handler, keyed } = options;
      return bus.consume({
        ...options,
        groupId: outer(options.groupId),
        topics: options.topics.map(outer),
        // Only the mode the caller chose is passed on, so the inner bus validates the same choice.
        handler: handler && ((record) => handler({ ...record, topic: inner(record.topic) })),
        keyed: keyed && {
          ...keyed,
          handler: (records, more, arrived) =>
            keyed.handler(
              records.map((record) => ({ ...record, topic: inner(record.topic) })),
              () => more().map((record) => ({ ...record, topic: inner(record.topic) })),
              arrived,
            ),
        },
      });
    },
    ...(bus.offerLocally
      ? {
          offerLocally: (groupId: string, topic: string, message: OutgoingMessage, fallback: () => void) =>
            bus.offerLocally!(outer(groupId), outer(topic), message, fallback),
        }
      : {}),
    close: () => bus.close(),
  };
}
