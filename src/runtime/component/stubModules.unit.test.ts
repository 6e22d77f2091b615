import { expect } from "chai";
import http2 from "node:http2";
import vm from "node:vm";
import { STUBBED_BUILTINS, stubModuleSource } from "./stubModules.js";

/** The stub as the component's bundle evaluates it (CommonJS), in a context of its own. */
function load(name: string): Record<string, any> {
  const module = { exports: {} as Record<string, any> };
  vm.runInNewContext(`(function (module, exports) {${stubModuleSource(name)}\n})`, { URL })(module, module.exports);
  return module.exports;
}

describe("stub modules for npm packages", () => {
  it("every stubbed module loads, keeps the host module's names, and its functions and classes throw naming themselves", () => {
    for (const name of STUBBED_BUILTINS) {
      const stub = load(name);
      expect(Object.keys(stub).length, name).to.be.above(0);
    }
    const net = load("net");
    expect(() => net.connect(443, "example.com")).to.throw(/^net\.connect is not available in the sandbox: the sandbox has no sockets/);
    expect(() => new net.Socket()).to.throw(/net\.Socket is not available/);
    // A class may still be extended when the package loads; only making one fails.
    class Derived extends net.Socket {}
    expect(() => new Derived()).to.throw(/net\.Socket is not available/);
    try {
      load("child_process").execSync("id");
      expect.fail("execSync ran");
    } catch (error) {
      expect(error).to.include({ code: "ERR_FEATURE_UNAVAILABLE_ON_PLATFORM" });
      expect((error as Error).message).to.equal("child_process.execSync is not available in the sandbox: the sandbox has no processes");
    }
    expect(() => load("dns").promises.lookup("example.com")).to.throw(/^dns\.promises\.lookup is not available/);
    // Nothing of the host's files: no search paths, no private fields.
    const module = load("module");
    expect(module).to.not.have.property("globalPaths");
    expect(Object.keys(module).filter((key) => key.startsWith("_"))).to.deep.equal([]);
    expect(stubModuleSource("module")).to.not.include("/root");
  });

  it("keeps the host's constants, and the pure parts work: net.isIP, tty.isatty, diagnostics_channel", () => {
    expect(load("http2").constants.HTTP2_HEADER_STATUS).to.equal(http2.constants.HTTP2_HEADER_STATUS);
    const net = load("net");
    const { isIP } = net;
    expect(
      ["1.2.3.4", "255.255.255.255", "::1", "fe80::1", "2001:db8::8a2e:370:7334", "256.1.1.1", "1.2.3", "x", "[::1]", ""].map(isIP),
    ).to.deep.equal([4, 4, 6, 6, 6, 0, 0, 0, 0, 0]);
    expect(net.isIPv4("10.0.0.1")).to.equal(true);
    expect(net.isIPv6("10.0.0.1")).to.equal(false);
    expect(load("tty").isatty(1)).to.equal(false);
    const dc = load("diagnostics_channel");
    const heard: unknown[] = [];
    const channel = dc.channel("pkg:request");
    expect(channel.hasSubscribers).to.equal(false);
    channel.publish({ ignored: true });
    dc.subscribe("pkg:request", (message: unknown, name: string) => heard.push([name, message]));
    expect(dc.hasSubscribers("pkg:request")).to.equal(true);
    dc.channel("pkg:request").publish({ n: 1 });
    const tracing = dc.tracingChannel("pkg:op");
    tracing.subscribe({ start: (context: { n: number }) => heard.push(["start", context.n]) });
    expect(tracing.traceSync((a: number, b: number) => a + b, { n: 2 }, undefined, 1, 2)).to.equal(3);
    expect(heard).to.deep.equal([
      ["pkg:request", { n: 1 }],
      ["start", 2],
    ]);
  });
});
