/**
 * On-CPU profiles of benchmarked processes with Linux `perf`, for `npm run bench -- cpu --perf`.
 *
 * V8's own profiler (`--cpu-prof`) samples on a timer in wall time: on a CPU shared with other
 * processes, a garbage collection or a function that was preempted is counted for as long as it
 * waited. `perf record -e cpu-clock` samples a process only while it runs on a CPU, so its
 * samples divide the process's CPU time itself. The processes run with `--perf-basic-prof`
 * (V8 writes `/tmp/perf-<pid>.map`, which names its JIT code; see `jit-map.ts`) and
 * `--interpreted-frames-native-stack` (interpreted functions get frames of their own), and perf
 * records call chains (frame pointers), so a sample is put down to the JavaScript it serves.
 *
 * Recording is started paused and switched on only around the phases to be explained
 * (`perf record --control`), so the samples of a process divided by the calls of those phases
 * give CPU per call by category:
 * - `gc:young` / `gc:full` / `gc:other`: a garbage collection anywhere on the stack (a scavenge;
 *   a mark-compact with its incremental marking and sweeping; the rest);
 * - `kernel`: the kernel (system calls: socket and pipe reads and writes, epoll; page faults);
 * - `js:<where>`: the nearest JavaScript frame, with the runtime and builtins it called, by
 *   source: `skep` (the bundle), `node:<module>` (Node's library), `<package>` (node_modules);
 * - `native`: Node's C++ with no JavaScript on the stack (libuv, the event loop);
 * plus the functions that cost the most, by nearest JavaScript frame and by leaf symbol.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, read, readFileSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { JitMap } from './jit-map.js';
import { round } from './workloads.js';

/** Node flags a process needs for its JavaScript to be named in perf's samples. */
export const PERF_NODE_FLAGS = ['--perf-basic-prof', '--interpreted-frames-native-stack'];

/** Sampling frequency, Hz: ~3 samples per ms of CPU, a few % of overhead with call chains. */
const HZ = 2999;

/** Why perf cannot record here, or undefined when it can. */
export function perfUnavailable(): string | undefined {
  const probe = spawnSync('perf', ['record', '-q', '-e', 'cpu-clock', '-o', '/dev/null', '--', 'true'], {
    encoding: 'utf8',
  });
  if (probe.error !== undefined) return `perf is not installed (${probe.error.message})`;
  if (probe.status !== 0)
    return `perf record failed (${probe.stderr.trim().split('\n')[0] ?? 'no message'}); kernel.perf_event_paranoid may forbid it`;
  return undefined;
}

/** How many functions and symbols a breakdown lists (`BENCH_CPU_PERF_TOP`, default 15). */
export const PERF_TOP = Math.max(1, Number(process.env['BENCH_CPU_PERF_TOP'] ?? 15));

/** One paused `perf record` of some processes, switched on and off around phases. */
export class PerfRecorder {
  readonly #dir: string;
  readonly #child: ChildProcess;
  readonly #ctl: number;
  readonly #ack: number;
  #on = false;
  #stopped = false;

  private constructor(dir: string, child: ChildProcess, ctl: number, ack: number) {
    this.#dir = dir;
    this.#child = child;
    this.#ctl = ctl;
    this.#ack = ack;
  }

  get dataFile(): string {
    return join(this.#dir, 'perf.data');
  }

  /** Starts perf (paused) on `pids`; `cpu`, when given, is where perf itself runs. */
  static async start(pids: number[], cpu: number | undefined): Promise<PerfRecorder> {
    const dir = mkdtempSync(join(tmpdir(), 'skep-perf-'));
    const ctl = join(dir, 'ctl');
    const ack = join(dir, 'ack');
    for (const fifo of [ctl, ack]) {
      const made = spawnSync('mkfifo', ['-m', '600', fifo]);
      if (made.status !== 0) throw new Error(`mkfifo ${fifo} failed`);
    }
    const args = [
      'record',
      '-q',
      '-e',
      'cpu-clock',
      '-F',
      String(HZ),
      '-g',
      '-D',
      '-1',
      '--control',
      `fifo:${ctl},${ack}`,
      '-p',
      pids.join(','),
      '-o',
      join(dir, 'perf.data'),
    ];
    const child =
      cpu === undefined
        ? spawn('perf', args, { stdio: ['ignore', 'ignore', 'inherit'] })
        : spawn('taskset', ['-c', String(cpu), 'perf', ...args], { stdio: ['ignore', 'ignore', 'inherit'] });
    // Opened read-write, a FIFO does not wait for the other end.
    const recorder = new PerfRecorder(dir, child, openSync(ctl, 'r+'), openSync(ack, 'r+'));
    await recorder.#command('ping');
    return recorder;
  }

  async enable(): Promise<void> {
    if (this.#on) return;
    await this.#command('enable');
    this.#on = true;
  }

  async disable(): Promise<void> {
    if (!this.#on) return;
    await this.#command('disable');
    this.#on = false;
  }

  /** Ends the recording (perf writes its file as it exits). */
  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    await this.disable();
    const exited = new Promise<void>((resolve) => this.#child.once('exit', () => resolve()));
    this.#child.kill('SIGINT');
    await exited;
    closeSync(this.#ctl);
    closeSync(this.#ack);
  }

  /** Removes the data file and the FIFOs. */
  remove(): void {
    rmSync(this.#dir, { recursive: true, force: true });
  }

  /** Writes a control command and waits for perf's `ack`. */
  async #command(cmd: string): Promise<void> {
    writeSync(this.#ctl, `${cmd}\n`);
    await waitForAck(this.#ack, this.#child);
  }
}

/** Reads perf's `ack\n` (5 bytes) from the ack FIFO. */
async function waitForAck(fd: number, child: ChildProcess): Promise<void> {
  const buf = Buffer.alloc(5);
  await new Promise<void>((resolve, reject) => {
    const onExit = () => reject(new Error('perf exited before acknowledging a command'));
    child.once('exit', onExit);
    read(fd, buf, 0, 5, null, (err) => {
      child.off('exit', onExit);
      if (err !== null) reject(err);
      else resolve();
    });
  });
}

/** A process's CPU per call, by category and by function, from its samples. */
export interface PerfBreakdown {
  samples: number;
  cpu_us_per_call: number;
  categories_us_per_call: Record<string, number>;
  top_js_functions_us_per_call: Array<[string, number]>;
  top_leaf_symbols_us_per_call: Array<[string, number]>;
}

/** A breakdown with every JavaScript function's CPU per call (for differences between runners). */
export interface PerfBreakdownWithFunctions extends PerfBreakdown {
  js_functions: Map<string, number>;
}

const GC_FRAME =
  /v8::internal::(Heap::CollectGarbage|Heap::PerformGarbageCollection|ScavengerCollector|Scavenger::|MarkCompactCollector|MinorMarkCompactCollector|Sweeper::|IncrementalMarking|ConcurrentMarking|MarkingVisitor|Heap::FinalizeIncrementalMarking|Heap::StartIncrementalMarking|Heap::MarkCompact|Heap::Scavenge)/;

/** A full (mark-compact) collection, its incremental marking or its sweeping. */
const FULL_GC_FRAME =
  /v8::internal::(MarkCompactCollector|Sweeper::|IncrementalMarking|Heap::MarkCompact|MarkingVisitor|Heap::FinalizeIncrementalMarking|Heap::StartIncrementalMarking)/;
/** A young-generation collection (scavenge). */
const YOUNG_GC_FRAME = /v8::internal::(Scaveng|Heap::Scavenge|MinorMarkCompactCollector)/;

/** Where a JavaScript frame's code comes from: `skep`, `node:<module>`, a package, or `js:other`. */
function sourceOf(sym: string): string {
  const modules = sym.lastIndexOf('/node_modules/');
  if (modules >= 0) {
    const rest = sym.slice(modules + '/node_modules/'.length).split('/');
    return `js:${rest[0]!.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]}`;
  }
  const node = /\snode:(?:internal\/)?([a-z_]+)/.exec(sym);
  if (node !== null) return `js:node:${node[1]}`;
  if (sym.includes('/dist/')) return 'js:skep';
  return 'js:other';
}

/** `JS:*name file:line:col` → `name (file:line)` with the file's path cut to its last parts. */
function jsName(sym: string): string {
  const m = /^JS:[*~^+-]?(\S*) (\S+)$/.exec(sym);
  if (m === null) return sym;
  const where = m[2]!
    .replace(/^file:\/\//, '')
    .split('/')
    .slice(-2)
    .join('/');
  return `${m[1] === '' ? '(anonymous)' : m[1]} ${where}`;
}

function top(map: Map<string, number>, n: number, scale: number): Array<[string, number]> {
  return [...map.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([k, v]) => [k, round(v * scale, 2)]);
}

/** A frame of perf's, its JIT code named from `map` (V8's perf map) where perf named it from there or not at all. */
function jitNamed(
  sym: string,
  dso: string,
  ip: string,
  map: JitMap | undefined,
): { sym: string; dso: string } {
  if (map === undefined || !(sym === '[unknown]' || /\/perf-\d+\.map$/.test(dso))) return { sym, dso };
  const name = map.lookup(Number.parseInt(ip, 16));
  return name === undefined ? { sym, dso } : { sym: name, dso: 'perf map' };
}

/**
 * Reads the recording and gives each process's breakdown; `calls` is how many calls each pid
 * served while recording was on.
 */
export async function perfBreakdowns(
  dataFile: string,
  calls: Map<number, number>,
): Promise<Map<number, PerfBreakdownWithFunctions>> {
  const script = spawn('perf', ['script', '-i', dataFile, '-F', 'pid,ip,sym,dso'], {
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  interface Acc {
    samples: number;
    categories: Map<string, number>;
    js: Map<string, number>;
    leaf: Map<string, number>;
  }
  const acc = new Map<number, Acc>();
  // perf's own naming of JIT code picks either of two names V8 gave one address over time, and
  // leaves code committed after it attached unnamed: the JIT frames are named from the map here.
  const jitMaps = new Map<number, JitMap>();
  for (const p of calls.keys()) {
    const file = `/tmp/perf-${p}.map`;
    try {
      jitMaps.set(p, JitMap.parse(readFileSync(file, 'utf8')));
    } catch {
      // No map (the process ran without --perf-basic-prof): perf's names stand.
    }
  }
  let pid = -1;
  let frames: Array<{ sym: string; dso: string }> = [];
  const add = (m: Map<string, number>, k: string) => m.set(k, (m.get(k) ?? 0) + 1);
  const flush = () => {
    if (pid < 0 || frames.length === 0) return;
    if (!calls.has(pid)) return;
    let a = acc.get(pid);
    if (a === undefined) {
      a = { samples: 0, categories: new Map(), js: new Map(), leaf: new Map() };
      acc.set(pid, a);
    }
    a.samples++;
    const leaf = frames[0]!;
    add(a.leaf, leaf.sym === '[unknown]' ? `[unknown] (${leaf.dso.split('/').pop()})` : leaf.sym);
    const js = frames.find((f) => f.sym.startsWith('JS:'));
    if (frames.some((f) => GC_FRAME.test(f.sym)))
      add(
        a.categories,
        frames.some((f) => FULL_GC_FRAME.test(f.sym))
          ? 'gc:full'
          : frames.some((f) => YOUNG_GC_FRAME.test(f.sym))
            ? 'gc:young'
            : 'gc:other',
      );
    else if (leaf.dso === '[kernel.kallsyms]') add(a.categories, 'kernel');
    else if (js !== undefined) add(a.categories, sourceOf(js.sym));
    else add(a.categories, 'native');
    if (js !== undefined) add(a.js, jsName(js.sym));
  };
  const lines = createInterface({ input: script.stdout });
  for await (const line of lines) {
    if (line.length === 0) {
      flush();
      pid = -1;
      frames = [];
      continue;
    }
    if (line.startsWith('\t') || line.startsWith(' ')) {
      const m = /^\s+([0-9a-f]+) (.*) \((.*)\)$/.exec(line);
      if (m !== null) frames.push(jitNamed(m[2]!, m[3]!, m[1]!, jitMaps.get(pid)));
      else if (pid < 0) pid = Number(line.trim().split(/\s+/)[0]);
      continue;
    }
    pid = Number(line.trim().split(/\s+/)[0]);
  }
  flush();
  const out = new Map<number, PerfBreakdownWithFunctions>();
  for (const [p, a] of acc) {
    // µs of CPU per sample, per call.
    const scale = 1e6 / HZ / calls.get(p)!;
    const categories: Record<string, number> = {};
    for (const [k, v] of [...a.categories.entries()].sort((x, y) => y[1] - x[1]))
      categories[k] = round(v * scale, 2);
    out.set(p, {
      samples: a.samples,
      cpu_us_per_call: round(a.samples * scale, 1),
      categories_us_per_call: categories,
      top_js_functions_us_per_call: top(a.js, PERF_TOP, scale),
      top_leaf_symbols_us_per_call: top(a.leaf, PERF_TOP, scale),
      js_functions: new Map([...a.js].map(([k, v]) => [k, v * scale])),
    });
  }
  return out;
}
