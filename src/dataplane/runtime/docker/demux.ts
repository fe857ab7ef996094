/**
 * The Docker attach/logs stream of a container created with `Tty: false` multiplexes
 * stdout and stderr in frames: an 8-byte header (stream type byte, 3 zero bytes, 32-bit
 * big-endian length) then the payload. The MCP server's stdout must reach the proxy as the
 * raw byte stream, so the frames are taken apart here, across chunk boundaries.
 */
import { PassThrough } from 'node:stream';

export type DemuxSink = (stream: 'stdout' | 'stderr', payload: Buffer) => void;

/** A push parser: feed it chunks in order; complete frames go to `sink`. */
export class FrameDemuxer {
  readonly #sink: DemuxSink;
  #pending: Buffer = Buffer.alloc(0);

  constructor(sink: DemuxSink) {
    this.#sink = sink;
  }

  push(chunk: Buffer): void {
    this.#pending = this.#pending.length === 0 ? chunk : Buffer.concat([this.#pending, chunk]);
    while (this.#pending.length >= 8) {
      const length = this.#pending.readUInt32BE(4);
      if (this.#pending.length < 8 + length) break;
      const type = this.#pending[0];
      const payload = this.#pending.subarray(8, 8 + length);
      this.#pending = this.#pending.subarray(8 + length);
      // Type 0 is stdin (never sent back); 1 stdout; 2 stderr.
      if (payload.length > 0) this.#sink(type === 2 ? 'stderr' : 'stdout', payload);
    }
  }

  /** Bytes of an unfinished frame (a stream that ends mid-frame is truncated). */
  get pendingBytes(): number {
    return this.#pending.length;
  }
}

/** Splits a multiplexed stream into a raw stdout stream and a stderr callback. */
export function demultiplex(source: NodeJS.ReadableStream, onStderr: (chunk: Buffer) => void): PassThrough {
  const stdout = new PassThrough();
  const demuxer = new FrameDemuxer((stream, payload) => {
    if (stream === 'stderr') onStderr(payload);
    else stdout.write(payload);
  });
  source.on('data', (chunk: Buffer) => demuxer.push(chunk));
  source.on('end', () => stdout.end());
  source.on('close', () => stdout.end());
  source.on('error', (err: Error) => stdout.destroy(err));
  return stdout;
}
