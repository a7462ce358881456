import { afterEach, describe, expect, it, vi } from "vitest";
import { createLookupCache } from "../../src/core/lookup-cache.js";

/** A store stand-in that counts lookups and can be made to fail or wait. */
function countingLookup(values: Record<string, string>) {
  const calls: string[] = [];
  let gate: Promise<void> = Promise.resolve();
  let failing = false;
  return {
    calls,
    hold() {
      let open!: () => void;
      gate = new Promise((resolve) => (open = resolve));
      return open;
    },
    fail: (on: boolean) => (failing = on),
    set: (key: string, value: string) => (values[key] = value),
    async lookup(key: string) {
      calls.push(key);
      await gate;
      if (failing) throw new Error("store down");
      return values[key];
    },
  };
}

afterEach(() => vi.useRealTimers());

describe("lookup cache", () => {
  it("answers from the cache within the TTL, and from the store after it", async () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    const store = countingLookup({ a: "1" });
    const cache = createLookupCache(store.lookup, { ttlMs: 5_000, maxEntries: 10 });
    expect(await cache.get("a")).toBe("1");
    store.set("a", "2");
    vi.advanceTimersByTime(4_999);
    expect(await cache.get("a")).toBe("1");
    vi.advanceTimersByTime(1);
    expect(await cache.get("a")).toBe("2");
    expect(store.calls).toEqual(["a", "a"]);
  });

  it("caches misses, so unknown names do not reach the store each time", async () => {
    const store = countingLookup({});
    const cache = createLookupCache(store.lookup, { ttlMs: 5_000, maxEntries: 10 });
    expect(await cache.get("nobody")).toBeUndefined();
    expect(await cache.get("nobody")).toBeUndefined();
    expect(store.calls).toEqual(["nobody"]);
  });

  it("shares one lookup among concurrent misses on a key", async () => {
    const store = countingLookup({ a: "1" });
    const cache = createLookupCache(store.lookup, { ttlMs: 5_000, maxEntries: 10 });
    const open = store.hold();
    const answers = Promise.all(Array.from({ length: 200 }, () => cache.get("a")));
    open();
    expect(await answers).toEqual(Array(200).fill("1"));
    expect(store.calls).toEqual(["a"]);
  });

  it("does not keep a failed lookup", async () => {
    const store = countingLookup({ a: "1" });
    const cache = createLookupCache(store.lookup, { ttlMs: 5_000, maxEntries: 10 });
    store.fail(true);
    await expect(cache.get("a")).rejects.toThrow("store down");
    store.fail(false);
    expect(await cache.get("a")).toBe("1");
    expect(store.calls).toEqual(["a", "a"]);
  });

  it("forgets matching entries and misses on invalidate, and lookups still in flight", async () => {
    const store = countingLookup({ a: "1", b: "2" });
    const cache = createLookupCache(store.lookup, { ttlMs: 5_000, maxEntries: 10 });
    await cache.get("a");
    await cache.get("b");
    await cache.get("c");
    cache.invalidate((value, key) => value === "1" || key === "c");
    await cache.get("a");
    await cache.get("b");
    await cache.get("c");
    expect(store.calls).toEqual(["a", "b", "c", "a", "c"]);

    // A lookup in flight may have read the row before the change: it is not kept.
    const open = store.hold();
    const inFlight = cache.get("d");
    cache.invalidate(() => false);
    open();
    await inFlight;
    await cache.get("d");
    expect(store.calls.slice(5)).toEqual(["d", "d"]);
  });

  it("keeps at most maxEntries, dropping the oldest", async () => {
    const store = countingLookup({ a: "1", b: "2", c: "3" });
    const cache = createLookupCache(store.lookup, { ttlMs: 5_000, maxEntries: 2 });
    await cache.get("a");
    await cache.get("b");
    await cache.get("c");
    await cache.get("b");
    await cache.get("a");
    expect(store.calls).toEqual(["a", "b", "c", "a"]);
  });
});
