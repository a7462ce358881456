/**
 * Characters in `text` as the spec counts them (Unicode code points, so an
 * emoji is one, not two UTF-16 units), counting no further than `limit + 1`:
 * a huge input costs no more than a small one.
 */
export function characterCount(text: string, limit: number): number {
  let count = 0;
  for (const _ of text) if (++count > limit) break;
  return count;
}

/**
 * The path of the first string in `value` (at any depth) that holds U+0000,
 * else undefined. PostgreSQL cannot store that character in text or jsonb,
 * so a request that would store one is refused up front.
 */
export function nulTextPath(value: unknown, path: string): string | undefined {
  if (typeof value === "string") return value.includes("\u0000") ? path : undefined;
  if (Array.isArray(value)) {
    for (const [index, item] of value.entries()) {
      const found = nulTextPath(item, `${path}[${index}]`);
      if (found) return found;
    }
    return undefined;
  }
  if (typeof value === "object" && value !== null && !ArrayBuffer.isView(value)) {
    for (const [key, item] of Object.entries(value)) {
      if (key.includes("\u0000")) return `${path}.${key}`;
      const found = nulTextPath(item, `${path}.${key}`);
      if (found) return found;
    }
  }
  return undefined;
}
