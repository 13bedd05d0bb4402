/**
 * @module bounded
 * A `Map` and a `Set` that keep at most `limit` entries and forget the oldest (by insertion order, the order
 * a `Map` iterates in) when one more is added: the memories of ids seen, ended or decided.
 *
 * Why not `map.delete(map.keys().next().value)`: in JavaScriptCore a fresh iterator walks past every entry
 * deleted since the map last rehashed, so a map that forgets its oldest on every insertion pays O(entries
 * deleted) per eviction (up to ~30 µs with 10,000 entries; docs/performance.md, "Issue 20, decisions").
 * Here the insertion order is also kept in a queue of `[key, serial]` slots read from a head index, so the
 * oldest key is found in O(1) amortized: a slot whose key was deleted or inserted again later is skipped,
 * and the queue is rebuilt from the map when its stale slots outnumber twice the live entries.
 *
 * Same behaviour as the plain `Map` / `Set` (order of iteration and of eviction, what `set` of a present key
 * does: the value changes, the position does not); to move a key to the newest position, `delete` it first.
 */

interface Slot<V> {
  value: V;
  /** The serial of the insertion that put the key where it is in the order. */
  serial: number;
}

/** A `Map` holding at most `limit` entries: adding a new key to a full map forgets the oldest key(s). */
export class BoundedMap<K, V> {
  private readonly map = new Map<K, Slot<V>>();
  private queueKeys: K[] = [];
  private queueSerials: number[] = [];
  private head = 0;
  private serial = 0;

  /**
   * @param limit the most entries kept (an integer ≥ 0; 0 keeps none).
   * @throws RangeError when `limit` is negative, not an integer, or not finite.
   */
  constructor(readonly limit: number) {
    if (!Number.isSafeInteger(limit) || limit < 0) throw new RangeError(`BoundedMap: limit must be an integer ≥ 0, got ${limit}`);
  }

  get size(): number {
    return this.map.size;
  }

  has(key: K): boolean {
    return this.map.has(key);
  }

  get(key: K): V | undefined {
    return this.map.get(key)?.value;
  }

  /**
   * Sets `key` to `value`: a present key keeps its place in the order, a new one becomes the newest and, when
   * the map then holds more than `limit` entries, the oldest are forgotten (the new one too when `limit` is 0).
   * @returns this map.
   */
  set(key: K, value: V): this {
    const slot = this.map.get(key);
    if (slot) {
      slot.value = value;
      return this;
    }
    const serial = this.serial++;
    this.map.set(key, { value, serial });
    this.queueKeys.push(key);
    this.queueSerials.push(serial);
    while (this.map.size > this.limit) this.forgetOldest();
    return this;
  }

  /** Forgets `key`. @returns whether it was present. */
  delete(key: K): boolean {
    if (!this.map.delete(key)) return false;
    if (this.queueKeys.length - this.head > 2 * this.map.size + 32) this.rebuild();
    return true;
  }

  clear(): void {
    this.map.clear();
    this.queueKeys = [];
    this.queueSerials = [];
    this.head = 0;
  }

  /** The oldest key (the first the map iterates), or undefined when empty; O(1) amortized. */
  oldest(): K | undefined {
    this.skipStale();
    return this.head < this.queueKeys.length ? this.queueKeys[this.head] : undefined;
  }

  /** `[key, value]` pairs, oldest first. */
  *entries(): IterableIterator<[K, V]> {
    for (const [k, s] of this.map) yield [k, s.value];
  }

  /** Keys, oldest first. */
  keys(): IterableIterator<K> {
    return this.map.keys();
  }

  /** Values, oldest first. */
  *values(): IterableIterator<V> {
    for (const s of this.map.values()) yield s.value;
  }

  [Symbol.iterator](): IterableIterator<[K, V]> {
    return this.entries();
  }

  private forgetOldest(): void {
    this.skipStale();
    const key = this.queueKeys[this.head]!;
    this.head++;
    this.map.delete(key);
    if (this.head > 1024 && this.head * 2 > this.queueKeys.length) this.dropHead();
  }

  /** Drops the slots before the head (a copy of the rest, O(slots left)). */
  private dropHead(): void {
    this.queueKeys.splice(0, this.head);
    this.queueSerials.splice(0, this.head);
    this.head = 0;
  }

  /** Moves the head past slots whose key was deleted or inserted again since. */
  private skipStale(): void {
    while (this.head < this.queueKeys.length && this.map.get(this.queueKeys[this.head]!)?.serial !== this.queueSerials[this.head]) this.head++;
  }

  /** The queue again from the map's own order (live slots only), O(size). */
  private rebuild(): void {
    const keys: K[] = [];
    const serials: number[] = [];
    for (const [k, s] of this.map) {
      keys.push(k);
      serials.push(s.serial);
    }
    this.queueKeys = keys;
    this.queueSerials = serials;
    this.head = 0;
  }
}

/** A `Set` holding at most `limit` values: adding a new value to a full set forgets the oldest. */
export class BoundedSet<T> {
  private readonly inner: BoundedMap<T, true>;

  /** @param limit the most values kept (an integer ≥ 0). @throws RangeError as {@link BoundedMap}. */
  constructor(limit: number) {
    this.inner = new BoundedMap<T, true>(limit);
  }

  get limit(): number {
    return this.inner.limit;
  }

  get size(): number {
    return this.inner.size;
  }

  has(value: T): boolean {
    return this.inner.has(value);
  }

  /** Adds `value` (a present value keeps its place); the oldest are forgotten past `limit`. @returns this set. */
  add(value: T): this {
    this.inner.set(value, true);
    return this;
  }

  delete(value: T): boolean {
    return this.inner.delete(value);
  }

  clear(): void {
    this.inner.clear();
  }

  /** The oldest value, or undefined when empty. */
  oldest(): T | undefined {
    return this.inner.oldest();
  }

  /** Values, oldest first. */
  values(): IterableIterator<T> {
    return this.inner.keys();
  }

  [Symbol.iterator](): IterableIterator<T> {
    return this.inner.keys();
  }
}
