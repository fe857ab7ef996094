/**
 * A `git` source of the MCPRegistry server: the registry file at `path` in one branch, tag or
 * commit of a repository served over http(s) (the git smart-HTTP protocol). The Skep image has no
 * `git` binary, so isomorphic-git (pure JavaScript) fetches it: the last commit of the one branch
 * or tag (a commit needs the history that holds it), into a fresh folder under the server's home
 * each time the source is read, removed afterwards; the file is read from the object store (no
 * checkout). The password (`auth.passwordFile`, a mounted
 * Secret) is read from its file at each fetch, sent as HTTP basic credentials only when the server
 * asks (RFC 7617 after a 401), and never logged: errors carry the repository without credentials.
 * What one read takes in is bounded by `MAX_REGISTRY_SOURCE_BYTES` (the `file.url` source's
 * limit), so a hostile server cannot fill the pod's memory: the HTTP responses together, counted
 * as they stream in and cut off past it, and every object of the pack (the registry file among
 * them), whose inflated size is read from the pack before isomorphic-git inflates anything.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import * as fs from 'node:fs';
import { join } from 'node:path';
import { inflateSync } from 'node:zlib';
import git, { type GitHttpRequest, type GitHttpResponse, type HttpClient } from 'isomorphic-git';
import { MAX_REGISTRY_SOURCE_BYTES, type GitRef } from './registry-config.js';

export interface GitSourceOptions {
  repository: string;
  ref: GitRef;
  path: string;
  auth?: { username: string; passwordFile: string };
  /** A folder of the server's own (the clones are made and removed under it). */
  workDir: string;
  /** Deadline of each HTTP request, ms. */
  timeoutMs?: number;
}

const DEFAULT_TIMEOUT_MS = 60_000;

/** The repository as it may be shown: without user information. */
export function displayRepository(repository: string): string {
  try {
    const u = new URL(repository);
    u.username = '';
    u.password = '';
    return u.toString();
  } catch {
    return '(not a URL)';
  }
}

async function* single(chunk: Uint8Array): AsyncIterableIterator<Uint8Array> {
  yield chunk;
}

async function collect(body: AsyncIterableIterator<Uint8Array> | undefined): Promise<Uint8Array | undefined> {
  if (body === undefined) return undefined;
  const parts: Uint8Array[] = [];
  for await (const part of body) parts.push(part);
  return Buffer.concat(parts);
}

/** A read that went past its byte limit (the message names the limit). */
class TooLargeError extends Error {
  constructor(what: string, limit: number) {
    super(`${what} more than ${limit} bytes (${limit / 1024 / 1024} MiB, the limit of a git source)`);
    this.name = 'TooLargeError';
  }
}

/** A pack the checker cannot walk: refused rather than handed on unchecked. */
class MalformedPackError extends Error {
  constructor(what: string) {
    super(`the server's pack is malformed (${what})`);
    this.name = 'MalformedPackError';
  }
}

/**
 * The pack data of an upload-pack response: the payload of its side-band channel 1 (gitprotocol-
 * pack, "side-band, side-band-64k"), or, without side-band, everything from the `PACK` signature
 * on. Progress (2) and error (3) packets are left to isomorphic-git.
 */
function packOf(response: Buffer): Buffer {
  const parts: Buffer[] = [];
  let pos = 0;
  while (pos + 4 <= response.length) {
    const head = response.toString('latin1', pos, pos + 4);
    if (head === 'PACK') return response.subarray(pos);
    const length = Number.parseInt(head, 16);
    if (!/^[0-9a-f]{4}$/.test(head) || (length > 0 && length < 4)) throw new MalformedPackError('pkt-line');
    if (length === 0) {
      pos += 4; // a flush packet
      continue;
    }
    if (response[pos + 4] === 1) parts.push(response.subarray(pos + 5, pos + length));
    pos += length;
  }
  return Buffer.concat(parts);
}

/** A git variable-length size: 7 bits a byte, least significant first, from `at`. */
function readSize(buf: Buffer, at: number): { value: number; next: number } {
  let value = 0;
  let scale = 1;
  for (let pos = at; pos < buf.length; pos++) {
    const byte = buf[pos] as number;
    value += (byte & 0x7f) * scale;
    scale *= 128;
    if ((byte & 0x80) === 0) return { value, next: pos + 1 };
  }
  throw new MalformedPackError('truncated size');
}

interface Inflated {
  buffer: Buffer;
  engine: { bytesWritten: number };
}

/**
 * Refuses a pack holding an object that inflates past `limit` bytes (gitformat-pack: each entry's
 * header states the inflated size of a whole object; a delta's own data starts with the size of
 * the object it makes). A small pack can inflate a thousandfold, and isomorphic-git inflates
 * every object whole while indexing the pack, so the sizes are checked first; each entry is
 * inflated here at most to its stated size, to find where the next one starts.
 */
function checkPack(pack: Buffer, limit: number): void {
  if (pack.length === 0) return; // nothing fetched (the ref is already here)
  if (pack.length < 12 || pack.toString('latin1', 0, 4) !== 'PACK') throw new MalformedPackError('signature');
  const count = pack.readUInt32BE(8);
  let pos = 12;
  for (let i = 0; i < count; i++) {
    const first = pack[pos];
    if (first === undefined) throw new MalformedPackError('truncated');
    const type = (first >> 4) & 7;
    // The header's size: 4 bits in the first byte, then 7 bits a byte.
    const rest = (first & 0x80) === 0 ? { value: 0, next: pos + 1 } : readSize(pack, pos + 1);
    const size = (first & 0x0f) + rest.value * 16;
    pos = rest.next;
    // An OFS_DELTA (6) names its base by offset, a REF_DELTA (7) by object id.
    if (type === 6) pos = readSize(pack, pos).next;
    else if (type === 7) pos += 20;
    else if (type < 1 || type > 4) throw new MalformedPackError(`object type ${type}`);
    if (size > limit) throw new TooLargeError(`the pack holds an object of ${size} bytes,`, limit);
    let inflated: Inflated;
    try {
      // With `info`, zlib also says how much input the entry's stream took (@types/node types only
      // the plain result).
      inflated = inflateSync(pack.subarray(pos), {
        info: true,
        maxOutputLength: Math.max(size, 1),
      }) as unknown as Inflated;
    } catch (err) {
      throw new MalformedPackError((err as Error).message);
    }
    if (type >= 6) {
      const made = readSize(inflated.buffer, readSize(inflated.buffer, 0).next).value;
      if (made > limit) throw new TooLargeError(`the pack holds an object of ${made} bytes,`, limit);
    }
    pos += inflated.engine.bytesWritten;
  }
}

/**
 * isomorphic-git's HTTP client over Node's fetch, with a deadline on every request and one byte
 * budget for every response of the read: a body is read chunk by chunk and cut off as soon as the
 * budget is spent (isomorphic-git holds a whole response in memory anyway).
 */
function fetchClient(timeoutMs: number, maxBytes: number): HttpClient {
  let received = 0;
  return {
    async request(req: GitHttpRequest): Promise<GitHttpResponse> {
      const body = await collect(req.body);
      const res = await fetch(req.url, {
        method: req.method ?? 'GET',
        headers: req.headers ?? {},
        ...(body === undefined ? {} : { body }),
        signal: AbortSignal.timeout(timeoutMs),
      });
      const parts: Uint8Array[] = [];
      // Leaving the loop by the throw cancels the body stream, which closes the connection.
      for await (const part of res.body ?? []) {
        received += part.length;
        if (received > maxBytes) throw new TooLargeError('the server sent', maxBytes);
        parts.push(part);
      }
      const bytes = Buffer.concat(parts);
      if (req.method === 'POST' && new URL(req.url).pathname.endsWith('/git-upload-pack') && res.ok)
        checkPack(packOf(bytes), maxBytes);
      return {
        url: res.url,
        method: req.method ?? 'GET',
        headers: Object.fromEntries(res.headers),
        body: single(bytes),
        statusCode: res.status,
        statusMessage: res.statusText,
      };
    },
  };
}

/** Fetches the repository and returns the registry file's text. */
export async function readGitSource(o: GitSourceOptions): Promise<string> {
  const dir = mkdtempSync(join(o.workDir, 'git-'));
  const http = fetchClient(o.timeoutMs ?? DEFAULT_TIMEOUT_MS, MAX_REGISTRY_SOURCE_BYTES);
  const auth = o.auth;
  const onAuth =
    auth === undefined
      ? undefined
      : () => ({ username: auth.username, password: readFileSync(auth.passwordFile, 'utf8').trim() });
  // Offered once: credentials the server refuses are not retried (isomorphic-git would loop).
  const onAuthFailure = () => ({ cancel: true as const });
  try {
    const ref = 'branch' in o.ref ? o.ref.branch : 'tag' in o.ref ? o.ref.tag : undefined;
    await git.init({ fs, dir });
    await git.addRemote({ fs, dir, remote: 'origin', url: o.repository });
    // One branch or tag, its last commit only; a commit needs the history that holds it (of every
    // branch and tag).
    const fetched = await git.fetch({
      fs,
      http,
      dir,
      url: o.repository,
      tags: ref === undefined,
      ...(ref === undefined ? {} : { ref, singleBranch: true, depth: 1 }),
      ...(onAuth === undefined ? {} : { onAuth, onAuthFailure }),
    });
    let oid = 'commit' in o.ref ? o.ref.commit : fetched.fetchHead;
    if (oid === null) throw new Error('the remote has no such ref');
    // An annotated tag points at a tag object; its target is the commit.
    const { type } = await git.readObject({ fs, dir, oid, format: 'deflated' });
    if (type === 'tag') oid = (await git.readTag({ fs, dir, oid })).tag.object;
    // The file is an object of the pack, so within the limit already.
    const { blob } = await git.readBlob({ fs, dir, oid, filepath: o.path });
    return Buffer.from(blob).toString('utf8');
  } catch (err) {
    throw new Error(
      `git source ${displayRepository(o.repository)} (${refText(o.ref)}, ${o.path}): ${messageOf(err)}`,
      { cause: err },
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const refText = (ref: GitRef) =>
  'branch' in ref ? `branch ${ref.branch}` : 'tag' in ref ? `tag ${ref.tag}` : `commit ${ref.commit}`;

/** isomorphic-git's message, with any URL in it stripped of user information. */
function messageOf(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  return text.replace(/(https?:\/\/)[^/@\s]+@/g, '$1');
}
