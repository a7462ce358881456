/** Where to cut a sentence that is too long, best first: clause punctuation, then any space. */
const clauseEnd = /[,;:\u2013\u2014)\]]\s/g;
const space = /\s/g;

/**
 * Splits text into the segments the embedded engine synthesizes one at a
 * time: sentences (by the Unicode rules of `language`), with any sentence
 * longer than `maxChars` cut at a clause or word boundary. Segments bound how
 * long one job holds a shared worker and how soon a cancelled job stops.
 * Whitespace-only segments are dropped, so only whitespace-only text yields none.
 *
 * Lazy, because segmenting a long input up front costs ~10 ms of event loop
 * per 30 000 characters and delays the first sentence.
 */
export function* splitSentences(text: string, language: string | undefined, maxChars: number): Generator<string, void, undefined> {
  for (const { segment } of sentenceSegmenter(language).segment(text)) {
    for (const piece of cutLongSentence(segment, maxChars)) {
      const trimmed = piece.trim();
      if (trimmed.length > 0) yield trimmed;
    }
  }
}

function sentenceSegmenter(language: string | undefined): Intl.Segmenter {
  try {
    return new Intl.Segmenter(language, { granularity: "sentence" });
  } catch {
    // eSpeak language names are not all BCP 47 tags; sentence rules barely differ by locale.
    return new Intl.Segmenter(undefined, { granularity: "sentence" });
  }
}

function cutLongSentence(sentence: string, maxChars: number): string[] {
  const pieces: string[] = [];
  let rest = sentence;
  while (rest.length > maxChars) {
    const cut = lastBoundary(rest, maxChars, clauseEnd) ?? lastBoundary(rest, maxChars, space) ?? hardCut(rest, maxChars);
    pieces.push(rest.slice(0, cut));
    rest = rest.slice(cut);
  }
  pieces.push(rest);
  return pieces;
}

/** Cuts text without spaces (CJK, long tokens) at `limit`, never between the halves of a surrogate pair. */
function hardCut(text: string, limit: number): number {
  const code = text.charCodeAt(limit - 1);
  return code >= 0xd800 && code <= 0xdbff ? limit - 1 : limit;
}

/** Index just after the last `pattern` match ending within `limit`, if it is not at the very start. */
function lastBoundary(text: string, limit: number, pattern: RegExp): number | undefined {
  let found: number | undefined;
  for (const match of text.slice(0, limit + 1).matchAll(pattern)) {
    const end = match.index + match[0].length;
    if (end <= limit && end > 0) found = end;
  }
  return found !== undefined && found > limit / 4 ? found : undefined;
}
