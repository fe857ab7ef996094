import type { ReplyTarget } from '../../src/dataplane/proxy/outlets.js';

/** A reply target that only counts the characters relayed to it (so nothing is optimised away). */
export function countingSink(): { sink: ReplyTarget; relayed: () => number } {
  let relayed = 0;
  const sink: ReplyTarget = {
    open: true,
    interim: () => true,
    final: (text) => {
      relayed += text.length;
    },
  };
  return { sink, relayed: () => relayed };
}
