// A real SMTP server for the tests (smtp-server, on loopback, AUTH PLAIN/LOGIN with a test user):
// it accepts every message and keeps it, parsed with mailparser. The lead's workflow tests use it
// too: startSmtp() → env() for a test server, waitFor(n).
import type { AddressInfo } from "node:net";
import { SMTPServer } from "smtp-server";
import { simpleParser } from "mailparser";

export interface ReceivedMail {
  /** The envelope: MAIL FROM and RCPT TO. */
  readonly envelopeFrom: string;
  readonly envelopeTo: string[];
  readonly from: string;
  readonly to: string;
  readonly subject: string;
  readonly text: string;
  readonly html: string | false;
  readonly headers: Record<string, string>;
}

export class SmtpTestServer {
  readonly user = "mailer";
  readonly password = "s3cret pass";
  readonly messages: ReceivedMail[] = [];
  port = 0;
  readonly #server: SMTPServer;

  constructor() {
    this.#server = new SMTPServer({
      // Loopback only: plain text, no STARTTLS, AUTH allowed without TLS.
      secure: false,
      disabledCommands: ["STARTTLS"],
      allowInsecureAuth: true,
      authMethods: ["PLAIN", "LOGIN"],
      logger: false,
      // A client's pooled connection must not hold stop() for the default 30 s.
      closeTimeout: 500,
      onAuth: (auth, _session, callback) => {
        if (auth.username === this.user && auth.password === this.password) callback(null, { user: auth.username });
        else callback(new Error("Invalid username or password"));
      },
      onData: (stream, session, callback) => {
        simpleParser(stream).then(
          (mail) => {
            const headers: Record<string, string> = {};
            for (const [name, value] of mail.headers) headers[name] = typeof value === "string" ? value : JSON.stringify(value);
            const address = (a: unknown) => (a && typeof a === "object" && "text" in a ? String(a.text) : "");
            this.messages.push({
              envelopeFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : "",
              envelopeTo: session.envelope.rcptTo.map((r) => r.address),
              from: address(mail.from),
              to: address(mail.to),
              subject: mail.subject ?? "",
              text: mail.text ?? "",
              html: mail.html ?? false,
              headers,
            });
            callback();
          },
          (error: Error) => callback(error),
        );
      },
    });
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.#server.listen(0, "127.0.0.1", () => resolve()));
    this.port = (this.#server.server.address() as AddressInfo).port;
    return this;
  }

  /** smtp://user:pass@127.0.0.1:port */
  get url(): string {
    return `smtp://${encodeURIComponent(this.user)}:${encodeURIComponent(this.password)}@127.0.0.1:${this.port}`;
  }

  /** The variables a Headwater server needs to send here. */
  env(from = "Headwater <headwater@example.com>"): Record<string, string> {
    return { HEADWATER_SMTP_URL: this.url, HEADWATER_EMAIL_FROM: from };
  }

  /** Waits until `count` messages matched. */
  async waitFor(predicate: (m: ReceivedMail) => boolean = () => true, count = 1, timeoutMs = 10_000): Promise<ReceivedMail[]> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const matched = this.messages.filter(predicate);
      if (matched.length >= count) return matched;
      if (Date.now() > deadline) throw new Error(`smtp: ${matched.length} of ${count} expected messages after ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}

/** Starts an SMTP server on loopback that keeps what it receives. */
export function startSmtp(): Promise<SmtpTestServer> {
  return new SmtpTestServer().start();
}
