/**
 * Loads a heavy dependency only when a code path needs it. The container engine client,
 * the Redis client and the AWS SDK together cost ~60 MB of memory and a lot of start-up
 * time; most `skep serve` processes and workload runners never use them. These packages
 * ship CommonJS, so a synchronous `require` keeps call sites synchronous.
 */
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

export function lazyRequire<T>(id: string): () => T {
  let loaded: T | undefined;
  return () => {
    loaded ??= require(id) as T;
    return loaded;
  };
}
