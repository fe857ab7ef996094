/**
 * The listening side shared by the sandbox's two relays on the runner's side (the filtering
 * egress proxy and the inbound bridge): every stream a relay opens is tracked, and closing
 * the relay stops listening and cuts those streams, so no tunnel outlives its workload.
 */
import type { ListenOptions, Server } from 'node:net';
import type { Duplex } from 'node:stream';

/** Streams to cut when the relay closes; one forgets itself once it closes. */
export class TrackedStreams {
  readonly #open = new Set<Duplex>();

  readonly add = (stream: Duplex): void => {
    this.#open.add(stream);
    stream.once('close', () => this.#open.delete(stream));
  };

  destroyAll(): void {
    for (const stream of this.#open) stream.destroy();
  }
}

export interface RelayListener {
  /** Stops listening and cuts every tracked stream; idempotent. */
  close(): Promise<void>;
}

/** Starts `server` listening at `at`; resolves once it listens, rejects if it cannot. */
export function listenRelay(
  server: Server,
  at: ListenOptions,
  streams: TrackedStreams,
): Promise<RelayListener> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(at, () => {
      server.off('error', reject);
      let closing: Promise<void> | undefined;
      resolve({
        close() {
          closing ??= new Promise<void>((done) => {
            server.close(() => done());
            streams.destroyAll();
          });
          return closing;
        },
      });
    });
  });
}
