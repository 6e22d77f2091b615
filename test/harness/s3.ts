// A real S3-compatible server for the tests (s3rver: the S3 REST protocol with SigV4 checks, on
// loopback, objects in a temporary directory), read back with the AWS SDK as any client would.
// Lead's workflow tests use it too: startS3(["bucket"]) → env() for a test server, objects().
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import S3rver from "s3rver";
import { GetObjectCommand, ListObjectsV2Command, S3Client } from "@aws-sdk/client-s3";

// The SDK warns once per process that its 2027 releases will need Node 22; not news for a test run.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= "true";

export interface StoredObject {
  readonly key: string;
  readonly body: string;
  readonly contentType: string | undefined;
  readonly metadata: Record<string, string>;
}

export class S3TestServer {
  /** s3rver's fixed credentials. */
  readonly accessKeyId = "S3RVER";
  readonly secretAccessKey = "S3RVER";
  readonly region = "us-east-1";
  endpoint = "";
  #server: S3rver | undefined;
  #client: S3Client | undefined;
  readonly #dir = fs.mkdtempSync(path.join(os.tmpdir(), "hw-s3-"));

  constructor(private readonly buckets: readonly string[]) {}

  async start(): Promise<this> {
    const server = new S3rver({
      address: "127.0.0.1",
      port: 0,
      directory: this.#dir,
      silent: true,
      configureBuckets: this.buckets.map((name) => ({ name })),
    });
    const { port } = await server.run();
    this.#server = server;
    this.endpoint = `http://127.0.0.1:${port}`;
    return this;
  }

  /** The variables a Headwater server needs to write here. */
  env(): Record<string, string> {
    return {
      HEADWATER_S3_ENDPOINT: this.endpoint,
      HEADWATER_S3_REGION: this.region,
      HEADWATER_S3_ACCESS_KEY_ID: this.accessKeyId,
      HEADWATER_S3_SECRET_ACCESS_KEY: this.secretAccessKey,
      HEADWATER_S3_FORCE_PATH_STYLE: "1",
    };
  }

  get client(): S3Client {
    return (this.#client ??= new S3Client({
      endpoint: this.endpoint,
      region: this.region,
      forcePathStyle: true,
      credentials: { accessKeyId: this.accessKeyId, secretAccessKey: this.secretAccessKey },
      requestChecksumCalculation: "WHEN_REQUIRED",
      responseChecksumValidation: "WHEN_REQUIRED",
    }));
  }

  /** Every object of a bucket under a prefix, read back. */
  async objects(bucket: string, prefix = ""): Promise<StoredObject[]> {
    const listed = await this.client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix }));
    const out: StoredObject[] = [];
    for (const { Key } of listed.Contents ?? []) if (Key) out.push(await this.object(bucket, Key));
    return out;
  }

  async object(bucket: string, key: string): Promise<StoredObject> {
    const got = await this.client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
    return { key, body: (await got.Body?.transformToString()) ?? "", contentType: got.ContentType, metadata: got.Metadata ?? {} };
  }

  async stop(): Promise<void> {
    this.#client?.destroy();
    await this.#server?.close();
    fs.rmSync(this.#dir, { recursive: true, force: true });
  }
}

/** Starts an S3-compatible server on loopback with these buckets. */
export function startS3(buckets: readonly string[]): Promise<S3TestServer> {
  return new S3TestServer(buckets).start();
}
