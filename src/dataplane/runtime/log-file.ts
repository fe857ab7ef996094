/**
 * An append-only log file with size rotation: `<file>`, `<file>.1`, ... up to `files`
 * rotated files, rotated before a write would take `<file>` past `maxBytes`. Used for
 * server stderr (process runtime) and runner logs.
 */
import {
  closeSync,
  existsSync,
  fstatSync,
  mkdirSync,
  openSync,
  renameSync,
  rmSync,
  writeSync,
} from 'node:fs';
import { dirname } from 'node:path';

export interface LogFileOptions {
  maxBytes: number;
  files: number;
}

/** Synchronous appender; the runner's writes are small and must survive a crash right after. */
export class RotatingLogFile {
  readonly path: string;
  readonly #options: LogFileOptions;
  #fd: number | undefined;
  #size = 0;

  constructor(path: string, options: LogFileOptions) {
    this.path = path;
    this.#options = options;
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  }

  write(chunk: string | Uint8Array): void {
    const data = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    if (this.#fd === undefined) this.#open();
    if (this.#size > 0 && this.#size + data.length > this.#options.maxBytes) {
      this.#rotate();
      this.#open();
    }
    writeSync(this.#fd as number, data);
    this.#size += data.length;
  }

  close(): void {
    if (this.#fd !== undefined) closeSync(this.#fd);
    this.#fd = undefined;
  }

  #open(): void {
    this.#fd = openSync(this.path, 'a', 0o600);
    this.#size = fstatSync(this.#fd).size;
  }

  #rotate(): void {
    this.close();
    const keep = this.#options.files;
    rmSync(`${this.path}.${keep}`, { force: true });
    for (let i = keep - 1; i >= 1; i--) {
      if (existsSync(`${this.path}.${i}`)) renameSync(`${this.path}.${i}`, `${this.path}.${i + 1}`);
    }
    renameSync(this.path, `${this.path}.1`);
  }
}
