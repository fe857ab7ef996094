export type { Db, Migrations, Store } from './store.js';
export { deleteSetting, openStore, readSetting, writeSetting } from './store.js';
