export { openStore, readSetting, writeSetting, deleteSetting } from './store.js';
export type { Db, Migrations, Store } from './store.js';
