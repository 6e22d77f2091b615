// Headwater's equivalent of @pipedream/types: identity helpers that only give TypeScript types.
const identity = <T>(x: T): T => x;
export const defineApp = identity;
export const defineSource = identity;
export const defineAction = identity;
export const defineComponent = identity;
export const definePropDefinitions = identity;
export default { defineApp, defineSource, defineAction, defineComponent, definePropDefinitions };
