/**
 * @module card/expiry
 * The TTLs of the pending cards (SPEC §5): one timer for all of them, armed for the earliest, over a binary
 * min-heap of (due time, request id) kept in two parallel arrays. A pending card costs two array slots, not a
 * timer object and its closure each (with 100,000 cards parked, the collector visits that much less on every
 * pass; docs/performance.md, "Issue 20, raising the bar, second round"). Due times are on the monotonic clock
 * (`performance.now()`, ms), like a `setTimeout` delay; a wall-clock change moves no card's expiry.
 * A card that ends otherwise is not taken out at once: its entry is skipped when it comes due (the owner says
 * whether an id is still live), and the heap is rebuilt from the live entries once the ended ones are the
 * majority, so it holds at most about twice the live cards (amortised O(1) per card).
 */

/** Longest single `setTimeout` delay, ms (a longer one would fire at once); a later due time is re-armed in steps. */
const MAX_DELAY_MS = 2 ** 31 - 1;
/** Ended entries tolerated before a rebuild is considered (below this the heap is small anyway). */
const REBUILD_MIN = 1024;

export class Expiry {
  /** Due times, ms on `performance.now()`'s clock; `due[i]` belongs to `ids[i]`; a min-heap on `due`. */
  #due: number[] = [];
  #ids: string[] = [];
  #timer: ReturnType<typeof setTimeout> | undefined;
  /** The due time the timer is armed for (Infinity: not armed). */
  #armedFor = Infinity;
  /** Entries whose card ended before its due time (an upper bound: counted by `forget`). */
  #ended = 0;

  /**
   * @param fire called once for a live id whose due time has passed (in due order).
   * @param live whether an id is still pending (an ended card's entry is dropped without `fire`).
   */
  constructor(
    private readonly fire: (id: string) => void,
    private readonly live: (id: string) => boolean,
  ) {}

  /** Entries held (live and ended ones not yet dropped). */
  get size(): number {
    return this.#ids.length;
  }

  /** Schedules `fire(id)` in `ms` milliseconds (at once for ms ≤ 0 or NaN, on the next timer turn). */
  add(id: string, ms: number): void {
    const due = performance.now() + (ms > 0 ? ms : 0);
    this.#push(due, id);
    if (due < this.#armedFor) this.#arm(due);
  }

  /** Notes that one card ended before its due time; rebuilds the heap once ended entries outnumber live ones. */
  forget(): void {
    this.#ended++;
    if (this.#ended >= REBUILD_MIN && this.#ended * 2 > this.#ids.length) this.#rebuild();
  }

  /** Stops the timer and drops every entry (nothing fires afterwards unless `add` is called again). */
  close(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#armedFor = Infinity;
    this.#due = [];
    this.#ids = [];
    this.#ended = 0;
  }

  #arm(due: number): void {
    clearTimeout(this.#timer);
    this.#armedFor = due;
    this.#timer = setTimeout(() => this.#run(), Math.min(MAX_DELAY_MS, Math.max(0, due - performance.now())));
  }

  /** Fires every live entry that is due, then re-arms for the earliest left (even if a `fire` threw). */
  #run(): void {
    this.#timer = undefined;
    this.#armedFor = Infinity;
    try {
      const now = performance.now();
      while (this.#ids.length > 0 && this.#due[0]! <= now) {
        const id = this.#pop();
        if (this.live(id)) this.fire(id);
      }
    } finally {
      if (this.#ids.length > 0 && this.#timer === undefined) this.#arm(this.#due[0]!);
    }
  }

  /** Keeps only the live entries and restores the heap order (O(n)). */
  #rebuild(): void {
    const due: number[] = [];
    const ids: string[] = [];
    for (let i = 0; i < this.#ids.length; i++) {
      if (this.live(this.#ids[i]!)) {
        due.push(this.#due[i]!);
        ids.push(this.#ids[i]!);
      }
    }
    this.#due = due;
    this.#ids = ids;
    this.#ended = 0;
    for (let i = (ids.length >> 1) - 1; i >= 0; i--) this.#down(i);
  }

  #push(due: number, id: string): void {
    const d = this.#due;
    const ids = this.#ids;
    let i = d.length;
    d.push(due);
    ids.push(id);
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (d[p]! <= due) break;
      d[i] = d[p]!;
      ids[i] = ids[p]!;
      i = p;
    }
    d[i] = due;
    ids[i] = id;
  }

  /** Removes and returns the id with the earliest due time (the heap must not be empty). */
  #pop(): string {
    const d = this.#due;
    const ids = this.#ids;
    const top = ids[0]!;
    const lastDue = d.pop()!;
    const lastId = ids.pop()!;
    if (ids.length > 0) {
      d[0] = lastDue;
      ids[0] = lastId;
      this.#down(0);
    }
    return top;
  }

  #down(i: number): void {
    const d = this.#due;
    const ids = this.#ids;
    const n = d.length;
    const due = d[i]!;
    const id = ids[i]!;
    for (;;) {
      let c = 2 * i + 1;
      if (c >= n) break;
      if (c + 1 < n && d[c + 1]! < d[c]!) c++;
      if (d[c]! >= due) break;
      d[i] = d[c]!;
      ids[i] = ids[c]!;
      i = c;
    }
    d[i] = due;
    ids[i] = id;
  }
}
