/**
 * Helpers for the telemetry integration tests: real workloads (server-everything over stdio)
 * whose runners run in this process, imported from run configurations like
 * `skep run --from-config`, and a raw HTTP GET that can send any Host header.
 */
import assert from 'node:assert/strict';
import { request } from 'node:http';
import type { TestContext } from 'node:test';
import type { ApiContext } from '../../../src/control/app/index.js';
import type { WorkloadManager } from '../../../src/workloads/index.js';
import {
  everythingBody,
  inProcessManager,
  runInProcess,
  waitFor,
  workloadEndpoint,
} from '../workloads/helpers.js';

/** Runners started by one test; `stopAll` ends them (the pipeline closes: last exports flushed). */
export class Runners {
  readonly #running: { name: string; controller: AbortController; done: Promise<number> }[] = [];
  readonly #ctx: ApiContext;
  readonly manager: WorkloadManager;

  constructor(t: TestContext) {
    const { ctx, manager } = inProcessManager(t);
    this.#ctx = ctx;
    this.manager = manager;
  }

  /** Imports `fields` over server-everything as `name`, runs its runner here; resolves its URL. */
  async start(name: string, fields: Record<string, unknown>): Promise<string> {
    const manager = this.manager;
    if (manager.rows.get('template') === undefined) await manager.create(everythingBody('template'));
    await manager.createFromConfig({ ...manager.exportConfig('template'), ...fields }, { name });
    const controller = new AbortController();
    this.#running.push({ name, controller, done: runInProcess(this.#ctx, name, controller.signal) });
    const status = await waitFor(`${name} to be running`, () => {
      const s = manager.rows.get(name)?.status;
      return s === 'running' || s === 'error' ? s : undefined;
    });
    if (status === 'error') throw new Error(`${name}: ${manager.rows.get(name)?.statusContext}`);
    return `http://127.0.0.1:${manager.rows.get(name)?.port as number}`;
  }

  /** The working URL of `name`'s `/mcp` (or `path`): with its access token. */
  endpoint(name: string, path?: string): string {
    return workloadEndpoint(this.manager, name, path);
  }

  async stopAll(): Promise<void> {
    for (const r of this.#running) r.controller.abort();
    for (const r of this.#running) assert.equal(await r.done, 0, `${r.name}: runner exit code`);
    this.#running.length = 0;
  }
}

/** GET `url` with exactly these headers (fetch will not send a foreign Host). */
export function rawGet(
  url: string,
  headers: Record<string, string> = {},
  method = 'GET',
): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method, headers }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (d: string) => {
        body += d;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}
