/** The change set a config editor applies: entries to add or update, names to remove. */
import type { ServerEntry } from './catalog.js';

export interface EntryChanges {
  readonly upsert: ReadonlyMap<string, ServerEntry>;
  readonly remove: ReadonlySet<string>;
}
