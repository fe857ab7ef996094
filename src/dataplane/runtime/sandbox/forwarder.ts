/**
 * The relays between a sandbox with its own network namespace and the runner, over unix
 * sockets in a directory bound into the sandbox at `SANDBOX_SOCKET_DIR` (a unix socket is a
 * file, so it crosses the namespace boundary that TCP cannot):
 *
 * - Inside, started by bwrap in place of the server: it listens first, then starts the
 *   server, so nothing the server does can come before the relay is there. Outbound:
 *   `127.0.0.1:SANDBOX_PROXY_PORT` → the runner's filtering proxy (`egress.sock`). Inbound, for
 *   HTTP servers: `inbound.sock` → `127.0.0.1:<target port>` where the server listens inside.
 *   It holds no authority: the filter is the runner's.
 * - Outside: `startInboundBridge`, the runner's `127.0.0.1:<target port>` → `inbound.sock`,
 *   so the proxy reaches an HTTP server as if it listened on the host.
 *
 * The inside relay is a Perl script when `perl` is on the server's PATH outside the folders
 * the sandbox hides (every Debian and Ubuntu has `/usr/bin/perl`: `perl-base` is essential):
 * it binds its sockets, forks one relay process per socket and then *execs* the server, so
 * the server keeps the relay's pid — bwrap's child, which gets the stop signal itself, and
 * whose exit ends the sandbox (the pid namespace takes the relay processes with it). It loads
 * no module (`Socket.pm` alone costs ~15 ms at start, the whole script ~3 ms, a Node relay
 * ~100 ms on these machines): the constants are Linux's (the sandbox is Linux only), and
 * `SOCK_STREAM` is 1 everywhere but MIPS, which gets the Node relay. Without perl, the relay
 * is the same logic in Node (`NODE_RELAY_SCRIPT`, run by the runner's own Node binary): it
 * stays the server's parent, passes SIGTERM/SIGINT/SIGHUP on and exits with the server's
 * status.
 */
import { realpathSync } from 'node:fs';
import { connect, createServer, type Server } from 'node:net';
import { delimiter, isAbsolute, join, relative } from 'node:path';
import { isExecutable } from '../../../shared/index.js';
import { listenRelay, type RelayListener, TrackedStreams } from './listener.js';

export const SANDBOX_SOCKET_DIR = '/run/skep';
export const SANDBOX_PROXY_PORT = 3128;
export const EGRESS_SOCKET = 'egress.sock';
export const INBOUND_SOCKET = 'inbound.sock';
/** The Node relay's settings (removed from the environment before the server starts). */
export const NODE_RELAY_CONFIG_ENV = 'SKEP_SANDBOX_RELAY';

/** What the inside relay forwards (paths are the sandbox's). */
export interface RelayPlan {
  /** `127.0.0.1:port` inside → the runner's filtering proxy at the unix socket `socket`. */
  egress?: { port: number; socket: string };
  /** The unix socket `socket` → `127.0.0.1:port` inside, where an HTTP server listens. */
  inbound?: { socket: string; port: number };
}

/** The program that runs the inside relay: `perl` (its path) or `node`. */
export type RelayProgram = { kind: 'perl'; path: string } | { kind: 'node' };

/**
 * The perl relay when a `perl` is on `env`'s PATH outside the folders the sandbox hides (a
 * perl under the home would need its installation shown; the system's needs nothing), and
 * not on MIPS; else the Node relay.
 */
export function relayProgram(env: NodeJS.ProcessEnv, hidden: readonly string[] = []): RelayProgram {
  if (process.arch.startsWith('mips')) return { kind: 'node' };
  const inHidden = (p: string) =>
    hidden.some((dir) => {
      const rel = relative(dir, p);
      return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
    });
  for (const dir of (env['PATH'] ?? '').split(delimiter)) {
    if (!isAbsolute(dir)) continue;
    const path = join(dir, 'perl');
    if (!isExecutable(path)) continue;
    let real: string;
    try {
      real = realpathSync(path);
    } catch {
      continue;
    }
    if (!inHidden(path) && !inHidden(real)) return { kind: 'perl', path };
  }
  return { kind: 'node' };
}

/** `listen connect` address pairs: `tcp:<port>` (127.0.0.1) or `unix:<path>`. */
function relayPairs(plan: RelayPlan): string[] {
  const pairs: string[] = [];
  if (plan.egress !== undefined) pairs.push(`tcp:${plan.egress.port}`, `unix:${plan.egress.socket}`);
  if (plan.inbound !== undefined) pairs.push(`unix:${plan.inbound.socket}`, `tcp:${plan.inbound.port}`);
  return pairs;
}

export interface RelayLaunch {
  command: string;
  args: string[];
  /** Variables to add to the environment the relay starts with. */
  env: Record<string, string>;
}

/** The command line that runs `command args` behind the inside relay of `plan`. */
export function relayLaunch(
  program: RelayProgram,
  plan: RelayPlan,
  command: string,
  args: readonly string[],
): RelayLaunch {
  const pairs = relayPairs(plan);
  if (program.kind === 'perl') {
    // perl takes a first `--` as the end of its own options: the script's `--` is the second.
    return {
      command: program.path,
      args: ['-e', PERL_RELAY_SCRIPT, '--', ...pairs, '--', command, ...args],
      env: {},
    };
  }
  return {
    command: process.execPath,
    args: ['-e', NODE_RELAY_SCRIPT],
    env: { [NODE_RELAY_CONFIG_ENV]: JSON.stringify({ pairs, command, args }) },
  };
}

/**
 * Arguments: `listen connect` pairs, `--`, the server's command line. Errors go to stderr (the
 * server's log) and end the sandbox: 70 when a socket cannot be set up, 127 when the server
 * cannot start. A connection whose other end cannot be reached is closed.
 */
const PERL_RELAY_SCRIPT = String.raw`
my @pairs;
push @pairs, [shift @ARGV, shift @ARGV] while @ARGV && $ARGV[0] ne '--';
shift @ARGV;
sub fail { print STDERR "[skep sandbox] relay: $_[0]\n"; exit(70) }
fail('no command') unless @ARGV;
sub address {
  my ($spec) = @_;
  return (2, pack('S n C4 x8', 2, $1, 127, 0, 0, 1)) if $spec =~ /^tcp:(\d+)$/;
  return (1, pack('S a*', 1, $1)) if $spec =~ /^unix:(\/.+)$/s;
  fail("bad address '$spec'");
}
my @relays;
for my $pair (@pairs) {
  my ($family, $address) = address($pair->[0]);
  my $server;
  socket($server, $family, 1, 0) && bind($server, $address) && listen($server, 128)
    or fail("cannot listen on $pair->[0]: $!");
  push @relays, [$server, address($pair->[1])];
}
sub relay {
  my ($client, $family, $address) = @_;
  my $upstream;
  socket($upstream, $family, 1, 0) && connect($upstream, $address) or return;
  my %open = (fileno($client) => [$client, $upstream], fileno($upstream) => [$upstream, $client]);
  while (%open) {
    my $want = '';
    vec($want, $_, 1) = 1 for keys %open;
    return if select(my $ready = $want, undef, undef, undef) < 0;
    for my $fd (keys %open) {
      next unless vec($ready, $fd, 1);
      my ($from, $to) = @{$open{$fd}};
      my $n = sysread($from, my $data, 65536);
      return unless defined $n;
      if ($n == 0) {
        shutdown($to, 1);
        delete $open{$fd};
        next;
      }
      while (length $data) {
        my $written = syswrite($to, $data) or return;
        substr($data, 0, $written, '');
      }
    }
  }
}
for my $r (@relays) {
  my $pid = fork;
  fail("cannot fork: $!") unless defined $pid;
  next if $pid;
  $SIG{CHLD} = 'IGNORE';
  $SIG{PIPE} = 'IGNORE';
  open(STDIN, '<', '/dev/null');
  open(STDOUT, '>', '/dev/null');
  my ($server, $family, $address) = @$r;
  while (1) {
    my $client;
    unless (accept($client, $server)) {
      select(undef, undef, undef, 0.1);
      next;
    }
    my $child = fork;
    next if !defined $child || $child;
    close($server);
    relay($client, $family, $address);
    exit(0);
  }
}
exec { $ARGV[0] } @ARGV or print STDERR "[skep sandbox] cannot start $ARGV[0]: $!\n";
exit(127);
`;

/** The same relay in Node, which stays the server's parent (it cannot exec). */
const NODE_RELAY_SCRIPT = String.raw`
'use strict';
const net = require('node:net');
const { spawn } = require('node:child_process');
const config = JSON.parse(process.env.${NODE_RELAY_CONFIG_ENV});
delete process.env.${NODE_RELAY_CONFIG_ENV};
function fail(message) {
  process.stderr.write('[skep sandbox] relay: ' + message + '\n');
  process.exit(70);
}
function address(spec) {
  const tcp = /^tcp:(\d+)$/.exec(spec);
  if (tcp) return { port: Number(tcp[1]), host: '127.0.0.1' };
  const unix = /^unix:(\/.+)$/s.exec(spec);
  if (unix) return { path: unix[1] };
  fail("bad address '" + spec + "'");
}
function relay(a, b) {
  a.on('error', () => b.destroy());
  b.on('error', () => a.destroy());
  a.on('close', () => b.destroy());
  b.on('close', () => a.destroy());
  a.pipe(b);
  b.pipe(a);
}
const ready = [];
for (let i = 0; i + 1 < config.pairs.length; i += 2) {
  const from = address(config.pairs[i]);
  const to = address(config.pairs[i + 1]);
  const server = net.createServer({ allowHalfOpen: true }, (c) => relay(c, net.connect({ ...to, allowHalfOpen: true })));
  ready.push(new Promise((resolve, reject) => {
    server.once('error', (err) => reject(new Error('cannot listen on ' + config.pairs[i] + ': ' + err.message)));
    server.listen(from, resolve);
  }));
}
Promise.all(ready).then(() => {
  const child = spawn(config.command, config.args, { stdio: 'inherit' });
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP']) process.on(signal, () => child.kill(signal));
  child.on('error', (err) => {
    process.stderr.write('[skep sandbox] cannot start ' + config.command + ': ' + err.message + '\n');
    process.exit(127);
  });
  child.on('exit', (code, signal) => process.exit(code === null ? 128 + (require('node:os').constants.signals[signal] || 1) : code));
}, (err) => fail(err.message));
`;

export type InboundBridge = RelayListener;

/** Listens on `127.0.0.1:port` and relays every connection to the unix socket `socketPath`. */
export function startInboundBridge(port: number, socketPath: string): Promise<InboundBridge> {
  const streams = new TrackedStreams();
  const server: Server = createServer((client) => {
    streams.add(client);
    const upstream = connect(socketPath);
    streams.add(upstream);
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    client.pipe(upstream);
    upstream.pipe(client);
  });
  return listenRelay(server, { port, host: '127.0.0.1' }, streams);
}
