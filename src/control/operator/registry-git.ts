/**
 * A `git` source of the MCPRegistry server: the registry file at `path` in one branch, tag or
 * commit of a repository served over http(s) (the git smart-HTTP protocol). The Skep image has no
 * `git` binary, so isomorphic-git (pure JavaScript) fetches it: the last commit of the one branch
 * or tag (a commit needs the history that holds it), into a fresh folder under the server's home
 * each time the source is read, removed afterwards; the file is read from the object store (no
 * checkout). The password (`auth.passwordFile`, a mounted
 * Secret) is read from its file at each fetch, sent as HTTP basic credentials only when the server
 * asks (RFC 7617 after a 401), and never logged: errors carry the repository without credentials.
 * What one read takes in is bounded: the HTTP responses together, counted as they stream in and
 * cut off past the limit, and the registry file read from the tree, each at most
 * `MAX_REGISTRY_SOURCE_BYTES` (the `file.url` source's limit), so a hostile server cannot fill the
 * pod's memory.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import * as fs from 'node:fs';
import { join } from 'node:path';
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
      return {
        url: res.url,
        method: req.method ?? 'GET',
        headers: Object.fromEntries(res.headers),
        body: single(Buffer.concat(parts)),
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
    const { blob } = await git.readBlob({ fs, dir, oid, filepath: o.path });
    // A small pack can inflate to a large file: one past the limit is not parsed. (isomorphic-git
    // has inflated it by now; the limit on the responses bounds the pack, not what it inflates to.)
    if (blob.length > MAX_REGISTRY_SOURCE_BYTES)
      throw new TooLargeError(`${o.path} holds`, MAX_REGISTRY_SOURCE_BYTES);
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
