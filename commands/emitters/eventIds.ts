/** Event ids are `<epoch ms>-<sequence>`, strictly increasing per emitter, even if the clock steps back. */
export interface EventIdParts {
  readonly ms: number;
  readonly seq: number;
}

export function parseEventId(id: string): EventIdParts | undefined {
  const match = /^(\d{1,16})-(\d{1,9})$/.exec(id);
  if (!match) return undefined;
  return { ms: Number(match[1]), seq: Number(match[2]) };
}

export const formatEventId = (parts: EventIdParts): string => `${parts.ms}-${parts.seq}`;

export function compareEventIds(a: EventIdParts, b: EventIdParts): number {
  return a.ms - b.ms || a.seq - b.seq;
}

/** `count` new ids after `last` (the emitter's newest id), stamped `nowMs` unless that would go back. */
export function nextEventIds(last: EventIdParts | undefined, nowMs: number, count: number): EventIdParts[] {
  const ids: EventIdParts[] = [];
  let ms = nowMs;
  let seq = 0;
  if (last && last.ms >= nowMs) {
    ms = last.ms;
    seq = last.seq + 1;
  }
  for (let i = 0; i < count; i++) ids.push({ ms, seq: seq + i });
  return ids;
}
