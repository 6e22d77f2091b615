// How the HTTP clients (axios, fetch, node-fetch) know a body made by the sandbox's form-data
// module (modules/formData.ts) without loading it: by a symbol its instances answer.

/** A form's body: its stream values read whole, and its Content-Type with its boundary. */
export const NODE_FORM_BODY = Symbol.for("headwater.nodeFormData.body");

export interface NodeFormBody {
  [NODE_FORM_BODY](): Promise<{ body: Uint8Array; contentType: string }>;
}

export function isNodeFormData(data: unknown): data is NodeFormBody {
  return typeof data === "object" && data !== null && typeof (data as Partial<NodeFormBody>)[NODE_FORM_BODY] === "function";
}
