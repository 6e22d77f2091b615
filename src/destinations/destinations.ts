// Performing what an action asked for with $.send.http / .email / .s3. The sandbox only records
// sends (checked on both sides of it, src/runtime/rules.ts normalizeSend); the caller of a run
// decides whether to perform them (a run that failed sends nothing) and hands them here.
//
// HTTP goes through the guarded outbound client, like any request user code makes. Email and S3
// go to servers the operator configured (HEADWATER_SMTP_URL, HEADWATER_S3_ENDPOINT), which are
// trusted and not guarded; without that configuration a send is a clear failed result.
import type { S3Client } from "@aws-sdk/client-s3";
import type { Transporter } from "nodemailer";
import { outboundRequest, OutboundError } from "../net/outbound.js";
import type { Send } from "../runtime/types.js";
import { VERSION } from "../version.js";

export interface S3Options {
  /** An S3-compatible endpoint (https://s3.us-east-1.amazonaws.com, a MinIO, …). */
  readonly endpoint: string;
  readonly region: string;
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  /** Bucket in the path (http://host/bucket/key), as most S3-compatible servers want. */
  readonly forcePathStyle: boolean;
}

export interface DestinationOptions {
  /** smtp://user:pass@host:587 (STARTTLS when offered) or smtps://…:465; email sends fail without it. */
  readonly smtpUrl?: string | undefined;
  /** The From of every email (required with smtpUrl). */
  readonly emailFrom?: string | undefined;
  /** S3 sends fail without it. */
  readonly s3?: S3Options | undefined;
  /** Lets $.send.http reach loopback, private and link-local addresses (HEADWATER_ALLOW_PRIVATE_NETWORKS). */
  readonly allowPrivateNetworks: boolean;
  /** Deadline of one send (ms); default 30 000. */
  readonly timeoutMs?: number | undefined;
}

export interface SendContext {
  /** Where $.send.email goes: the account owner's address (Pipedream's rule: no `to`). */
  readonly ownerEmail: string | null;
  /** The source, component or workflow whose run made the sends. */
  readonly emitterId: string;
  /** Names S3 objects (one per run: give each run, or step, its own). */
  readonly invocationId: string;
  readonly nowMs: number;
}

export interface SendResult {
  readonly kind: Send["kind"];
  readonly ok: boolean;
  readonly error?: string;
  /** http: status, url; email: messageId, recipient; s3: bucket, key. */
  readonly detail?: Record<string, unknown>;
}

const DEFAULT_TIMEOUT_MS = 30_000;
/** A receiver's answer is not kept; reading at most this much of it is enough. */
const MAX_HTTP_RESPONSE_BYTES = 1024 * 1024;

export const MISSING_SMTP = "$.send.email needs an SMTP server: the operator sets HEADWATER_SMTP_URL (and HEADWATER_EMAIL_FROM)";
export const MISSING_S3 =
  "$.send.s3 needs an S3-compatible endpoint: the operator sets HEADWATER_S3_ENDPOINT, HEADWATER_S3_ACCESS_KEY_ID and HEADWATER_S3_SECRET_ACCESS_KEY";

class SendFailure extends Error {
  constructor(
    message: string,
    readonly detail?: Record<string, unknown>,
  ) {
    super(message);
  }
}

const pad = (n: number) => String(n).padStart(2, "0");

/** `<prefix><YYYY>/<MM>/<DD>/<invocationId>-<n>.json`, the date in UTC. */
export function s3Key(prefix: string, context: Pick<SendContext, "invocationId" | "nowMs">, n: number): string {
  const d = new Date(context.nowMs);
  return `${prefix}${d.getUTCFullYear()}/${pad(d.getUTCMonth() + 1)}/${pad(d.getUTCDate())}/${context.invocationId}-${n}.json`;
}

export class Destinations {
  readonly #options: DestinationOptions;
  readonly #timeoutMs: number;
  // Built on first use: most nodes never send email or write to S3.
  #mail: Promise<Transporter> | undefined;
  #s3: Promise<S3Client> | undefined;
  #closed = false;

  constructor(options: DestinationOptions) {
    this.#options = options;
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  }

  /** Performs every send (concurrently); one result per send, in order. Never rejects. */
  async perform(sends: readonly Send[], context: SendContext): Promise<SendResult[]> {
    let s3Count = 0;
    return Promise.all(
      sends.map(async (send): Promise<SendResult> => {
        const n = send.kind === "s3" ? s3Count++ : 0;
        try {
          if (this.#closed) throw new SendFailure("the node is shutting down");
          const detail =
            send.kind === "http"
              ? await this.#http(send, context)
              : send.kind === "email"
                ? await this.#email(send, context)
                : await this.#putObject(send, context, n);
          return { kind: send.kind, ok: true, detail };
        } catch (error) {
          const detail = error instanceof SendFailure ? error.detail : undefined;
          return { kind: send.kind, ok: false, error: describeError(error), ...(detail ? { detail } : {}) };
        }
      }),
    );
  }

  async close(): Promise<void> {
    this.#closed = true;
    const [mail, s3] = [this.#mail, this.#s3];
    this.#mail = this.#s3 = undefined;
    await Promise.allSettled([mail?.then((t) => t.close()), s3?.then((c) => c.destroy())]);
  }

  async #http(send: Extract<Send, { kind: "http" }>, context: SendContext): Promise<Record<string, unknown>> {
    let url: URL;
    try {
      url = new URL(send.url);
    } catch {
      throw new SendFailure(`${send.url} is not a valid URL`);
    }
    for (const [name, value] of Object.entries(send.params ?? {})) url.searchParams.append(name, value);
    const headers: Record<string, string> = {
      "user-agent": `Headwater-Actions/${VERSION}`,
      "x-headwater-emitter-id": context.emitterId,
      "x-headwater-invocation-id": context.invocationId,
      ...send.headers,
    };
    let body: string | undefined;
    // GET and HEAD carry no body; anything else carries data: a string as it is, other values as JSON.
    if (send.data !== undefined && send.method !== "GET" && send.method !== "HEAD") {
      body = typeof send.data === "string" ? send.data : JSON.stringify(send.data);
      headers["content-type"] ??= typeof send.data === "string" ? "text/plain; charset=utf-8" : "application/json";
    }
    const response = await outboundRequest(
      {
        url,
        method: send.method,
        headers,
        ...(body !== undefined ? { body } : {}),
        timeoutMs: this.#timeoutMs,
        maxResponseBytes: MAX_HTTP_RESPONSE_BYTES,
      },
      { allowPrivateNetworks: this.#options.allowPrivateNetworks },
    );
    const detail = { status: response.status, url: response.url };
    if (response.status < 200 || response.status > 299) throw new SendFailure(`${send.url} answered HTTP ${response.status}`, detail);
    return detail;
  }

  async #email(send: Extract<Send, { kind: "email" }>, context: SendContext): Promise<Record<string, unknown>> {
    const { smtpUrl, emailFrom } = this.#options;
    if (!smtpUrl || !emailFrom) throw new SendFailure(MISSING_SMTP);
    if (!context.ownerEmail) throw new SendFailure("$.send.email goes to the account's email address, and this account has none");
    const transport = await (this.#mail ??= this.#transport(smtpUrl));
    const info = (await transport.sendMail({
      from: emailFrom,
      to: context.ownerEmail,
      subject: send.subject,
      ...(send.text !== undefined || send.html === undefined ? { text: send.text ?? "" } : {}),
      ...(send.html !== undefined ? { html: send.html } : {}),
      headers: { "X-Headwater-Emitter-Id": context.emitterId, "X-Headwater-Invocation-Id": context.invocationId },
    })) as { messageId?: string; accepted?: unknown[] };
    return { messageId: info.messageId ?? null, recipient: context.ownerEmail };
  }

  async #transport(smtpUrl: string): Promise<Transporter> {
    const nodemailer = await import("nodemailer");
    const url = new URL(smtpUrl);
    return nodemailer.createTransport({
      host: url.hostname.replace(/^\[|\]$/g, ""),
      port: url.port ? Number(url.port) : url.protocol === "smtps:" ? 465 : 587,
      secure: url.protocol === "smtps:",
      ...(url.username ? { auth: { user: decodeURIComponent(url.username), pass: decodeURIComponent(url.password) } } : {}),
      connectionTimeout: this.#timeoutMs,
      greetingTimeout: this.#timeoutMs,
      socketTimeout: this.#timeoutMs,
      pool: true,
      maxConnections: 4,
    });
  }

  async #putObject(send: Extract<Send, { kind: "s3" }>, context: SendContext, n: number): Promise<Record<string, unknown>> {
    const s3 = this.#options.s3;
    if (!s3) throw new SendFailure(MISSING_S3);
    const client = await (this.#s3 ??= this.#client(s3));
    const { PutObjectCommand } = await import("@aws-sdk/client-s3");
    const key = s3Key(send.prefix, context, n);
    const detail = { bucket: send.bucket, key };
    try {
      await client.send(
        new PutObjectCommand({
          Bucket: send.bucket,
          Key: key,
          Body: JSON.stringify(send.payload),
          ContentType: "application/json",
          Metadata: { "emitter-id": context.emitterId, "invocation-id": context.invocationId },
        }),
      );
    } catch (error) {
      throw new SendFailure(`s3://${send.bucket}/${key}: ${describeError(error)}`, detail);
    }
    return detail;
  }

  async #client(s3: S3Options): Promise<S3Client> {
    const { S3Client } = await import("@aws-sdk/client-s3");
    return new S3Client({
      endpoint: s3.endpoint,
      region: s3.region,
      forcePathStyle: s3.forcePathStyle,
      credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
      // Checksums only where S3 requires them: several S3-compatible servers refuse the newer headers.
      requestChecksumCalculation: "WHEN_REQUIRED",
      responseChecksumValidation: "WHEN_REQUIRED",
      maxAttempts: 2,
      requestHandler: { connectionTimeout: this.#timeoutMs, requestTimeout: this.#timeoutMs },
    });
  }
}

function describeError(error: unknown): string {
  if (error instanceof SendFailure) return error.message;
  if (error instanceof OutboundError) return `${error.code}: ${error.message}`;
  const e = error as { name?: unknown; message?: unknown; code?: unknown } | null;
  const name = typeof e?.name === "string" && e.name !== "Error" ? `${e.name}: ` : "";
  const message = typeof e?.message === "string" && e.message !== "" ? e.message : String(error);
  return `${name}${message}`.slice(0, 1000);
}
