// Paths of the sandbox's /tmp, shared by the prelude (the platform's file helpers) and the `fs`
// module bundled on demand: pure functions, so a copy in each bundle keeps no state of its own.

/** A path made absolute (a relative one is under /tmp, the sandbox's working directory) and normalized. */
export function normalizePath(text: string): string {
  const absolute = text.startsWith("/") ? text : `/tmp/${text}`;
  const parts: string[] = [];
  for (const part of absolute.split("/")) {
    if (part === "" || part === ".") continue;
    if (part === "..") parts.pop();
    else parts.push(part);
  }
  return "/" + parts.join("/");
}

/** /tmp itself or a path under it (absolute and normalized). */
export const isTmpPath = (path: string): boolean => typeof path === "string" && (path === "/tmp" || path.startsWith("/tmp/"));
