/**
 * A DevTools-protocol session with a running Node process, from outside it: SIGUSR1 makes Node
 * open its inspector on 127.0.0.1:9229 (Node's documented behaviour); when `use` is done the
 * process is asked to close it again (`process._debugEnd()`, what `inspector.close()` calls),
 * so the next process can use the port. One process at a time.
 */
import { request, WebSocket } from 'undici';

const PORT = 9229;

/** Sends one protocol command and resolves with its result. */
export type InspectorCall = (method: string, params?: object) => Promise<Record<string, unknown>>;

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

/** Runs `use` with an inspector session of process `pid` (a Node process of this user). */
export async function withInspector<T>(pid: number, use: (call: InspectorCall) => Promise<T>): Promise<T> {
  const deadline = Date.now() + 15_000;
  await portClosed(deadline);
  process.kill(pid, 'SIGUSR1');
  const ws = new WebSocket(await inspectorUrl(deadline));
  await new Promise<void>((resolve, reject) => {
    ws.addEventListener('open', () => resolve(), { once: true });
    ws.addEventListener('error', () => reject(new Error('cannot reach the inspector')), { once: true });
  });
  const replies = new Map<number, (result: Record<string, unknown>) => void>();
  ws.addEventListener('message', (event) => {
    const msg = JSON.parse(String(event.data)) as { id?: number; result?: Record<string, unknown> };
    if (msg.id !== undefined) replies.get(msg.id)?.(msg.result ?? {});
  });
  let next = 0;
  const call: InspectorCall = (method, params = {}) =>
    new Promise((resolve) => {
      const id = ++next;
      replies.set(id, resolve);
      ws.send(JSON.stringify({ id, method, params }));
    });
  try {
    return await use(call);
  } finally {
    // Closing waits for this session to end, so the session ends right after asking.
    ws.send(
      JSON.stringify({
        id: ++next,
        method: 'Runtime.evaluate',
        // A dynamic import() may not be available to code evaluated through the protocol.
        params: { expression: 'process._debugEnd()' },
      }),
    );
    await new Promise((r) => setTimeout(r, 100));
    ws.close();
    await portClosed(deadline);
  }
}
