// Built-ins captured before any component code runs, so a component that replaces JSON or
// Object methods in its own isolate cannot make the platform's bookkeeping lie or fail.
export const stringify = JSON.stringify;
export const parse = JSON.parse;
export const objectKeys = Object.keys;
export const objectEntries = Object.entries;
