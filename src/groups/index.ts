export { DEFAULT_GROUP, GroupService, validateGroupName } from './groups.js';
export type { Group, GroupMembers } from './groups.js';
