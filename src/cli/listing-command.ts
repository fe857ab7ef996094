/** A listing subcommand (`skep group list`, `skep client status`, ...): one declaration per listing. */
import type { Command } from 'commander';
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
