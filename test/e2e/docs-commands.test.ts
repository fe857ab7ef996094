/**
 * The docs name only what exists. Every `skep …` command line in the shell code blocks of
 * README.md and docs/*.md, and every inline code span that starts with `skep `, must name a
 * command of the built CLI, and every flag it uses (`--name`, `-f`) must appear in that
 * command's `--help`. Only the built CLI's help text is consulted (`node dist/skep.mjs <path>
 * --help`), never its source: a subcommand exists when its parent's help lists it under
 * "Commands:", or (a hidden one, such as `skep runner`) when its own help's usage line names it. A line meant to fail (an example of an error) ends with the comment
 * `# expected to fail` and is skipped; an inline span cannot carry that mark, so an error example
 * in prose must go in a code block with it. Every relative link (and image) in the same files
 * must point to a file that exists, and a `#anchor` to a heading of the file it names, with
 * GitHub's heading ids; a repository path in inline code (`src/…`, `test/…`) must exist too.
 */
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { requireService } from '../helpers/services.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const BUNDLE = join(ROOT, 'dist', 'skep.mjs');
const SKIP_MARK = '# expected to fail';
const run = promisify(execFile);

/** README.md and every Markdown file under docs/. */
function docFiles(): string[] {
  const out = [join(ROOT, 'README.md')];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) =>
      a.name.localeCompare(b.name),
    )) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.md')) out.push(path);
    }
  };
  walk(join(ROOT, 'docs'));
  return out;
}

interface Block {
  lang: string;
  body: string;
}

/** The fenced code blocks of a Markdown text, and the text with them blanked out. */
function splitFences(text: string): { blocks: Block[]; prose: string } {
  const blocks: Block[] = [];
  const prose = text.replace(/^```(\w*)[^\n]*\n([\s\S]*?)^```[ \t]*$/gm, (_m, lang: string, body: string) => {
    blocks.push({ lang, body });
    return '';
  });
  return { blocks, prose };
}

/** A place in the docs, for the failure messages. */
interface Use {
  where: string;
  line: string;
}

/**
 * The `skep` command lines of a shell block: comments dropped, a line that starts with `[` or
 * `--` continues the command above it, `a && b`, `a; b` and `x | skep …` split into commands.
 */
function blockCommands(body: string, where: string): Use[] {
  const joined: string[] = [];
  for (const raw of body.split('\n')) {
    if (raw.includes(SKIP_MARK)) {
      joined.push('');
      continue;
    }
    const line = raw.replace(/(^|\s+)#.*$/, '').trim();
    if (/^(\[|--)/.test(line) && joined.length > 0) joined[joined.length - 1] += ` ${line}`;
    else joined.push(line);
  }
  return joined.flatMap((line) => commandsOf(line).map((c) => ({ where, line: c })));
}

/** The `skep …` commands in one shell line (`node dist/skep.mjs` counts as `skep`). */
function commandsOf(line: string): string[] {
  const out: string[] = [];
  for (const piece of line.split(/\s*(?:&&|\|\||;)\s*/)) {
    // `a | b`: a new command, unless b starts with a flag (`--url <u> | --api-url <u>`: choices).
    const segments = piece.split(/\s+\|\s+/);
    let current: string | undefined;
    for (const segment of segments) {
      const s = segment.trim().replace(/^node dist\/skep\.mjs\b/, 'skep');
      if (/^skep(\s|$)/.test(s)) {
        if (current !== undefined) out.push(current);
        current = s;
      } else if (current !== undefined && /^[-[]/.test(s)) {
        current += ` ${s}`;
      } else if (current !== undefined) {
        out.push(current);
        current = undefined;
      }
    }
    if (current !== undefined) out.push(current);
  }
  // Output redirections are the shell's, not the command's.
  return out.map((c) => c.replace(/\s+\d?>.*$/, '').trim());
}

/** Inline code spans that are a `skep` command (table cells escape `|` as `\|`). */
function inlineCommands(prose: string, where: string): Use[] {
  const out: Use[] = [];
  for (const m of prose.matchAll(/(`+)([^`]+?)\1/g)) {
    const span = (m[2] as string).replaceAll('\\|', '|').trim();
    if (/^(skep|node dist\/skep\.mjs) /.test(span))
      out.push({ where, line: span.replace(/^node dist\/skep\.mjs/, 'skep') });
  }
  return out;
}

const helpCache = new Map<string, string>();

/** `skep <path> --help`, as the built CLI prints it. */
function help(path: string[]): string {
  const key = path.join(' ');
  const cached = helpCache.get(key);
  if (cached !== undefined) return cached;
  const r = spawnSync(process.execPath, [BUNDLE, ...path, '--help'], {
    encoding: 'utf8',
    timeout: 30_000,
    env: { ...process.env, NO_COLOR: '1' },
  });
  assert.equal(r.status, 0, `skep ${key} --help exited ${r.status}: ${r.stderr}`);
  helpCache.set(key, r.stdout);
  return r.stdout;
}

/**
 * Fills the help cache for every path the commands could name, level by level and a few
 * processes at a time (each is a Node start; one after the other they took a minute on a loaded
 * machine). A path is one more word, `a|b` choices expanded, under a command that has subcommands.
 */
async function prefetchHelp(uses: Use[]): Promise<void> {
  const fetchAll = async (paths: string[][]): Promise<void> => {
    const queue = paths.filter((p) => !helpCache.has(p.join(' ')));
    const worker = async (): Promise<void> => {
      for (let path = queue.shift(); path !== undefined; path = queue.shift()) {
        const { stdout } = await run(process.execPath, [BUNDLE, ...path, '--help'], {
          encoding: 'utf8',
          timeout: 30_000,
          env: { ...process.env, NO_COLOR: '1' },
        }).catch(() => ({ stdout: undefined }));
        if (stdout !== undefined) helpCache.set(path.join(' '), stdout);
      }
    };
    await Promise.all([1, 2, 3, 4].map(worker));
  };
  await fetchAll([[]]);
  const lines = uses.map((u) => words(u.line).slice(1));
  for (let depth = 0; depth < 3; depth++) {
    const next = new Map<string, string[]>();
    for (const ws of lines) {
      const parent = ws.slice(0, depth);
      const word = ws[depth];
      if (word === undefined || !/^[a-z][a-z0-9-]*(\|[a-z][a-z0-9-]*)*$/.test(word)) continue;
      const text = helpCache.get(parent.join(' '));
      if (text === undefined || subcommands(text).size === 0) continue;
      for (const w of word.split('|')) next.set([...parent, w].join(' '), [...parent, w]);
    }
    await fetchAll([...next.values()]);
  }
}

/** The subcommand names (aliases included) a help text lists under "Commands:". */
function subcommands(text: string): Set<string> {
  const section = text.split(/^Commands:\n/m)[1];
  const names = new Set<string>();
  if (section === undefined) return names;
  for (const line of section.split('\n')) {
    const m = /^ {2}(\S+)/.exec(line);
    if (m) for (const name of (m[1] as string).split('|')) names.add(name);
  }
  names.delete('help');
  return names;
}

/** A command the help does not list (`skep runner`) still exists when its own help names it. */
function hidden(path: string[]): boolean {
  const usage = /^Usage: (.+?) \[options\]/.exec(help(path))?.[1] ?? '';
  return usage.replace(/\|\S+/g, '') === `skep ${path.join(' ')}`;
}

/** Shell-ish words of a command: `$(…)` and quoted strings are one opaque word each. */
function words(command: string): string[] {
  return command
    .replace(/\$\([^)]*\)/g, 'SUBST')
    .replace(/'[^']*'|"[^"]*"/g, 'QUOTED')
    .split(/\s+/)
    .filter((w) => w !== '');
}

interface Resolved {
  path: string[];
  rest: string[];
}

/**
 * Walks the words after `skep` down the command tree. A word with `|` in command position
 * (`stop|restart|rm`) is a choice: each is resolved. Fails on a word in command position that
 * its parent does not list.
 */
function resolveCommand(use: Use): Resolved[] {
  const ws = words(use.line).slice(1);
  const walk = (path: string[], rest: string[]): Resolved[] => {
    const [word, ...after] = rest;
    const names = subcommands(help(path));
    if (word === undefined || names.size === 0 || /^[-[<]/.test(word)) return [{ path, rest }];
    const choices = word.split('|');
    const known = choices.filter((c) => names.has(c) || hidden([...path, c]));
    if (known.length === 0 && choices.length > 1) return [{ path, rest }];
    assert.equal(
      known.length,
      choices.length,
      `${use.where}: \`${use.line}\`: \`skep ${[...path, word].join(' ')}\` is not a command (skep ${path.join(' ')} --help lists ${[...names].join(', ')})`,
    );
    return choices.flatMap((c) => walk([...path, c], after));
  };
  return walk([], ws);
}

/** The flags a command line uses, up to a bare `--` (what follows is the server's). */
function flagsOf(rest: string[]): string[] {
  const flags: string[] = [];
  for (const raw of rest) {
    if (raw === '--') break;
    const w = raw.replace(/^\[+/, '');
    const m = /^(--?[A-Za-z][\w-]*)/.exec(w);
    if (m) flags.push(m[1] as string);
  }
  return flags;
}

function checkCommand(use: Use): void {
  for (const { path, rest } of resolveCommand(use)) {
    const text = help(path);
    for (const flag of flagsOf(rest)) {
      const listed = new RegExp(`(^|[\\s,])${flag}([\\s,=<\\[]|$)`, 'm').test(text);
      assert.ok(
        listed,
        `${use.where}: \`${use.line}\`: \`skep ${path.join(' ')} --help\` does not list ${flag}`,
      );
    }
  }
}

/** GitHub's heading ids: lower case, punctuation dropped, spaces to `-`, repeats get `-1`, `-2`. */
function anchors(markdown: string): Set<string> {
  const ids = new Set<string>();
  const seen = new Map<string, number>();
  for (const m of splitFences(markdown).prose.matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = (m[1] as string)
      .toLowerCase()
      .replace(/[^\p{L}\p{M}\p{N}\p{Pc}\- ]/gu, '')
      .replaceAll(' ', '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    ids.add(n === 0 ? base : `${base}-${n}`);
  }
  return ids;
}

test('every skep command in README.md and docs/ names a real command with real flags', async (t) => {
  if (!requireService(t, 'dist/skep.mjs', existsSync(BUNDLE), 'run `npm run build` first')) return;
  const uses: Use[] = [];
  for (const file of docFiles()) {
    const where = relative(ROOT, file);
    const { blocks, prose } = splitFences(readFileSync(file, 'utf8'));
    for (const block of blocks)
      if (['sh', 'bash', 'shell', 'console'].includes(block.lang))
        uses.push(...blockCommands(block.body, where));
    uses.push(...inlineCommands(prose, where));
  }
  // The docs do show commands: an empty list would pass for the wrong reason.
  assert.ok(uses.length > 50, `only ${uses.length} commands found`);
  await prefetchHelp(uses);
  for (const use of uses) checkCommand(use);
});

test('the command check itself: an unknown command or flag fails, choices and pipes are read', (t) => {
  if (!requireService(t, 'dist/skep.mjs', existsSync(BUNDLE), 'run `npm run build` first')) return;
  assert.throws(() => checkCommand({ where: 'x', line: 'skep nosuchcommand' }), /is not a command/);
  assert.throws(() => checkCommand({ where: 'x', line: 'skep group nosuch' }), /is not a command/);
  assert.throws(
    () => checkCommand({ where: 'x', line: 'skep list --nosuchflag' }),
    /does not list --nosuchflag/,
  );
  assert.throws(() => checkCommand({ where: 'x', line: 'skep stop|restart|nosuch a' }), /is not a command/);
  assert.deepEqual(
    blockCommands(
      'printf %s "$T" | skep secret set x   # a comment\nskep serve [--port 1]\n  [--allow-remote]\n',
      'x',
    ).map((u) => u.line),
    ['skep secret set x', 'skep serve [--port 1] [--allow-remote]'],
  );
  assert.deepEqual(
    blockCommands(`skep serve --prot 1   ${SKIP_MARK}\nskep export a > a.json && skep rm a\n`, 'x').map(
      (u) => u.line,
    ),
    ['skep export a', 'skep rm a'],
  );
  checkCommand({ where: 'x', line: 'skep run cmd://$(command -v node) --name a -- --not-a-skep-flag' });
});

test('every relative link in README.md and docs/ points to a file, and every #anchor to a heading', () => {
  const broken: string[] = [];
  let links = 0;
  for (const file of docFiles()) {
    const text = readFileSync(file, 'utf8');
    const prose = splitFences(text).prose.replace(/(`+)[^`]*?\1/g, '');
    for (const m of prose.matchAll(/!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
      const target = m[1] as string;
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto: …
      links++;
      const [pathPart, anchor] = target.split('#', 2) as [string, string | undefined];
      const dest = pathPart === '' ? file : resolve(dirname(file), decodeURIComponent(pathPart));
      const where = `${relative(ROOT, file)}: (${target})`;
      if (!existsSync(dest)) {
        broken.push(`${where}: no file ${relative(ROOT, dest)}`);
        continue;
      }
      if (anchor !== undefined && dest.endsWith('.md') && !anchors(readFileSync(dest, 'utf8')).has(anchor))
        broken.push(`${where}: no heading #${anchor} in ${relative(ROOT, dest)}`);
    }
  }
  assert.ok(links > 30, `only ${links} relative links found`);
  assert.deepEqual(broken, []);
});

test('every repository path the docs name in code (`src/…`, `test/…`, `deploy/…`) exists', () => {
  const missing: string[] = [];
  let paths = 0;
  for (const file of docFiles()) {
    for (const m of splitFences(readFileSync(file, 'utf8')).prose.matchAll(
      /`((?:src|test|scripts|deploy|bench)\/[^`\s*<]*)`/g,
    )) {
      paths++;
      if (!existsSync(join(ROOT, m[1] as string))) missing.push(`${relative(ROOT, file)}: ${m[1]}`);
    }
  }
  assert.ok(paths > 30, `only ${paths} paths found`);
  assert.deepEqual(missing, []);
});

test('heading ids follow GitHub', () => {
  assert.deepEqual(
    [
      ...anchors(
        "# A\n## When `skep run` returns\n## The server's environment\n## A\n```\n# not a heading\n```\n",
      ),
    ],
    ['a', 'when-skep-run-returns', 'the-servers-environment', 'a-1'],
  );
});
