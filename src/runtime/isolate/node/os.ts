// Node's `os`, describing the sandbox: no host facts (hostname, addresses, users) leave the runner.
const os = {
  EOL: "\n",
  devNull: "/dev/null",
  constants: { signals: {}, errno: {}, priority: {} },
  arch: () => "x64",
  platform: () => "linux",
  type: () => "Linux",
  release: () => "6.0.0-headwater",
  version: () => "#1 SMP",
  machine: () => "x86_64",
  hostname: () => "headwater",
  homedir: () => "/tmp",
  tmpdir: () => "/tmp",
  endianness: () => "LE" as const,
  uptime: () => 0,
  loadavg: () => [0, 0, 0],
  totalmem: () => 256 * 1024 * 1024,
  freemem: () => 128 * 1024 * 1024,
  availableParallelism: () => 1,
  cpus: () => [{ model: "headwater sandbox", speed: 0, times: { user: 0, nice: 0, sys: 0, idle: 0, irq: 0 } }],
  networkInterfaces: () => ({}),
  userInfo: () => ({ uid: 1000, gid: 1000, username: "component", homedir: "/tmp", shell: null }),
  getPriority: () => 0,
  setPriority: () => undefined,
};

export default os;
