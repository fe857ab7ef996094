export type { ClientRegistrationRow, Group, GroupMembers } from './groups.js';
export { DEFAULT_GROUP, GroupService, validateGroupName } from './groups.js';
