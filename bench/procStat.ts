// CPU and I/O of a process tree from the kernel's accounting (/proc), for the benches that say
// where a request's or a run's CPU goes (bench:cost, bench:many-sources).
import { readdirSync, readFileSync } from "node:fs";

/** Kernel clock ticks per second (USER_HZ): what /proc's utime and stime count in. */
const TICKS = 100;

export interface Cpu {
  readonly userMs: number;
  readonly systemMs: number;
}

export const add = (a: Cpu, b: Cpu): Cpu => ({ userMs: a.userMs + b.userMs, systemMs: a.systemMs + b.systemMs });
export const minus = (a: Cpu, b: Cpu): Cpu => ({ userMs: a.userMs - b.userMs, systemMs: a.systemMs - b.systemMs });
export const none: Cpu = { userMs: 0, systemMs: 0 };

/** What `read` returns, or `otherwise` when the process or thread has ended meanwhile. */
function readOr<T>(read: () => T, otherwise: T): T {
  try {
    return read();
  } catch {
    return otherwise;
  }
}

/** utime and stime of a /proc stat line (fields 14 and 15; the name in parentheses may hold spaces); none once it ended. */
function cpuOf(statFile: string): Cpu {
  const stat = readOr(() => readFileSync(statFile, "utf8"), undefined);
  if (stat === undefined) return none;
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return { userMs: (Number(fields[11]) * 1000) / TICKS, systemMs: (Number(fields[12]) * 1000) / TICKS };
}

/** Every process below `pid` (the runner children and anything they start). */
function descendants(pid: number): number[] {
  const found: number[] = [];
  const visit = (parent: number) => {
    for (const tid of readOr(() => readdirSync(`/proc/${parent}/task`), [])) {
      const children = readOr(() => readFileSync(`/proc/${parent}/task/${tid}/children`, "utf8"), "");
      for (const child of children.split(" ").filter(Boolean).map(Number)) {
        found.push(child);
        visit(child);
      }
    }
  };
  visit(pid);
  return found;
}

export interface Sample {
  /** Each thread of the server process by id (BENCH_THREADS=1 prints them: ids grow in the order threads were made). */
  readonly threads: Map<number, Cpu>;
  readonly main: Cpu;
  readonly otherThreads: Cpu;
  readonly children: Cpu;
  readonly io: { syscr: number; syscw: number; writeBytes: number };
}

export function sample(pid: number): Sample {
  let otherThreads = none;
  const threads = new Map<number, Cpu>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    const cpu = cpuOf(`/proc/${pid}/task/${tid}/stat`);
    threads.set(Number(tid), cpu);
    if (Number(tid) !== pid) otherThreads = add(otherThreads, cpu);
  }
  const children = descendants(pid).reduce((sum, child) => add(sum, cpuOf(`/proc/${child}/stat`)), none);
  const io = Object.fromEntries(
    readFileSync(`/proc/${pid}/io`, "utf8")
      .trim()
      .split("\n")
      .map((line) => {
        const [key, value] = line.split(": ");
        return [key, Number(value)];
      }),
  );
  return {
    threads,
    main: threads.get(pid) ?? none,
    otherThreads,
    children,
    io: { syscr: io.syscr, syscw: io.syscw, writeBytes: io.write_bytes },
  };
}
