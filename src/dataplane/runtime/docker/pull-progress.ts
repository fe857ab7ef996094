/**
 * Aggregates the JSON progress events of an image pull (one stream of
 * `{status, id, progressDetail: {current, total}}` per layer) into one percentage: the
 * downloaded bytes of every layer seen so far over their known total. Layers that report
 * "Already exists" or "Pull complete" count as done.
 */
export interface PullEvent {
  status?: string;
  id?: string;
  progressDetail?: { current?: number; total?: number };
  error?: string;
  errorDetail?: { message?: string };
}

interface LayerState {
  current: number;
  total: number;
  done: boolean;
}

const DONE = /^(already exists|pull complete|download complete|verifying checksum|extracting)/i;

export class PullProgress {
  readonly #layers = new Map<string, LayerState>();

  /** Feeds one event; returns the error message when the event reports a failure. */
  add(event: PullEvent): string | undefined {
    if (event.error !== undefined) return event.errorDetail?.message ?? event.error;
    const id = event.id;
    const status = event.status ?? '';
    if (id === undefined || id === '' || /^(pulling from|digest:|status:)/i.test(status)) return undefined;
    const layer = this.#layers.get(id) ?? { current: 0, total: 0, done: false };
    if (/^downloading/i.test(status)) {
      const detail = event.progressDetail ?? {};
      if (typeof detail.total === 'number' && detail.total > 0) layer.total = detail.total;
      if (typeof detail.current === 'number')
        layer.current = Math.min(detail.current, layer.total || detail.current);
    } else if (DONE.test(status)) {
      layer.done = true;
      if (layer.total > 0) layer.current = layer.total;
    }
    this.#layers.set(id, layer);
    return undefined;
  }

  /** 0-100; layers of unknown size count only once done. */
  percent(): number {
    if (this.#layers.size === 0) return 0;
    let current = 0;
    let total = 0;
    let done = 0;
    for (const layer of this.#layers.values()) {
      if (layer.done) done++;
      if (layer.total > 0) {
        total += layer.total;
        current += layer.done ? layer.total : layer.current;
      }
    }
    if (done === this.#layers.size) return 100;
    if (total === 0) return Math.floor((done / this.#layers.size) * 100);
    return Math.min(99, Math.floor((current / total) * 100));
  }
}
