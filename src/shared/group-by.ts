/**
 * Groups items by a key: key → the values of its items, in the order the items came. Keys
 * keep the order of their first item (Node 20 has no `Map.groupBy`).
 */
export function groupBy<T, K, V>(
  items: Iterable<T>,
  keyOf: (item: T) => K,
  valueOf: (item: T) => V,
): Map<K, V[]> {
  const groups = new Map<K, V[]>();
  for (const item of items) {
    const key = keyOf(item);
    const group = groups.get(key);
    if (group === undefined) groups.set(key, [valueOf(item)]);
    else group.push(valueOf(item));
  }
  return groups;
}
