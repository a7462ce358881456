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

/** Longest id a refusal message repeats whole (every id Switchboard issues or accepts is shorter). */
const shownIdCharacters = 128;

/**
 * An id as a refusal message shows it: whole up to 128 characters, else cut
 * short, so a caller's huge id cannot swell the message (a gRPC status
 * message travels in a header, where it would break the response).
 */
export function shownId(id: string): string {
  if (characterCount(id, shownIdCharacters) <= shownIdCharacters) return id;
  // At most 2 UTF-16 units per character: enough text for the characters shown, without spreading a huge id.
  return `${[...id.slice(0, 2 * shownIdCharacters)].slice(0, shownIdCharacters).join("")}…`;
}
