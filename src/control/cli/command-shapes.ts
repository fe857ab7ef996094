/**
 * The two shapes most subcommands have, one declaration each: a listing (`skep group list`,
 * `skep client status`, ...) and a call with one argument and one result (`skep group create
 * <name>`, `skep registry info <name>`, ...). Both take `--json`.
 */
import type { Command } from 'commander';
import type { ApiContext } from '../app/index.js';
import { withContext } from './context.js';
import { type Cell, type JsonOpt, printListing } from './output.js';

/** What a listing shows: the items it loads, its JSON form, and its table's columns and rows. */
export interface Listing<T> {
  load: () => Promise<T[]>;
  /** The `--json` output. */
  json: (items: T[]) => unknown;
  headers: string[];
  row: (item: T) => Cell[];
}

/**
 * Adds `usage` (e.g. `'list'`) to `parent` with `--json`: it loads the items and prints them as a
 * table, or as JSON with `--json`. Returns the subcommand (for `.alias()`).
 */
export function addListing<T>(
  parent: Command,
  usage: string,
  description: string,
  listing: Listing<T>,
): Command {
  return parent
    .command(usage)
    .description(description)
    .option('--json', 'print JSON')
    .action(async (opts: JsonOpt) => {
      const items = await listing.load();
      printListing(opts, listing.json(items), listing.headers, items.map(listing.row));
    });
}

/** A call: `run` passes the command's argument to the domain services, `print` shows the result. */
export interface Call<R> {
  run: (ctx: ApiContext, arg: string) => Promise<R> | R;
  /** Prints `result`: JSON with `--json`, text otherwise (and sets the exit status if it must). */
  print: (result: R, opts: JsonOpt, arg: string) => void;
}

/** Adds `usage` (one argument, e.g. `'create <name>'`) to `parent` with `--json`, doing `call`. */
export function addCall<R>(parent: Command, usage: string, description: string, call: Call<R>): Command {
  return parent
    .command(usage)
    .description(description)
    .option('--json', 'print JSON')
    .action(async (arg: string, opts: JsonOpt) => {
      const result = await withContext((ctx) => call.run(ctx, arg));
      call.print(result, opts, arg);
    });
}
