/**
 * One full garbage collection in a running Node process, from outside it, for
 * `npm run bench -- cpu`: every long-running runner has run full GCs, but in a bench run a
 * runner with little to promote may never get there, and a runner can behave differently once
 * it has (docs/performance.md, "Why a runner got slower after its first full GC").
 *
 * SIGUSR1 makes Node open its inspector on 127.0.0.1:9229 (Node's documented behaviour); over
 * the DevTools protocol the process is asked for `HeapProfiler.collectGarbage` (a full GC, no
 * heap snapshot: a snapshot would leave V8 tracking every object move for good), then to close
 * its inspector again (`process._debugEnd()`), so the next process can use the port. One process
 * at a time.
 */
import { request, WebSocket } from 'undici';

const PORT = 9229;

async function inspectorUrl(deadline: number): Promise<string> {
  for (;;) {
    try {
      const res = await request(`http://127.0.0.1:${PORT}/json/list`);
      const list = (await res.body.json()) as Array<{ webSocketDebuggerUrl?: string }>;
      const url = list[0]?.webSocketDebuggerUrl;
      if (url !== undefined) return url;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error('the inspector did not open');
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function portClosed(deadline: number): Promise<void> {
  for (;;) {
    try {
      const res = await request(`http://127.0.0.1:${PORT}/json/list`);
      await res.body.dump();
    } catch {
      return;
    }
    if (Date.now() > deadline) throw new Error(`the inspector on port ${PORT} did not close`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Runs one full GC in process `pid` (a Node process of this user, inspector port 9229 free). */
export async function fullGcIn(pid: number): Promise<void> {
  const deadline = Date.now() + 15_000;
  await portClosed(deadline);
  process.kill(pid, 'SIGUSR1');
  const ws = new WebSocket(await inspectorUrl(deadline));
  await new Promise<void>((resolve, reject) => {
    ws.addEventListener('open', () => resolve(), { once: true });
    ws.addEventListener('error', () => reject(new Error('cannot reach the inspector')), { once: true });
  });
  const replies = new Map<number, () => void>();
  ws.addEventListener('message', (event) => {
    const id = (JSON.parse(String(event.data)) as { id?: number }).id;
    if (id !== undefined) replies.get(id)?.();
  });
  const call = (id: number, method: string, params: object = {}) =>
    new Promise<void>((resolve) => {
      replies.set(id, resolve);
      ws.send(JSON.stringify({ id, method, params }));
    });
  await call(1, 'HeapProfiler.collectGarbage');
  // Closing waits for this session to end, so the session ends right after asking.
  ws.send(
    JSON.stringify({
      id: 2,
      method: 'Runtime.evaluate',
      // `process._debugEnd()` is what `inspector.close()` calls; a dynamic import() may not be
      // available to code evaluated through the protocol.
      params: { expression: 'process._debugEnd()' },
    }),
  );
  await new Promise((r) => setTimeout(r, 100));
  ws.close();
  await portClosed(deadline);
}
