import { describe, expect, test } from "vitest";
import { splitSentences } from "../../src/providers/speech/split-sentences.js";

describe("splitSentences", () => {
  test("splits on sentence ends and drops blank segments", () => {
    expect([...splitSentences("Hello there. How are you?  Fine!\n\n", "en", 250)]).toEqual(["Hello there.", "How are you?", "Fine!"]);
    expect([...splitSentences("   ", "en", 250)]).toEqual([]);
  });

  test("cuts an over-long sentence at a clause, else at a space, within the limit", () => {
    const clauses = "one two three, four five six, seven eight nine, ten eleven twelve.";
    const pieces = [...splitSentences(clauses, "en", 30)];
    expect(pieces.every((piece) => piece.length <= 30)).toBe(true);
    expect(pieces[0]).toBe("one two three, four five six,");
    expect(pieces.join(" ")).toBe(clauses);

    const words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda";
    expect([...splitSentences(words, "en", 20)].every((piece) => piece.length <= 20 && !piece.includes("  "))).toBe(true);
  });

  test("text without spaces is cut hard but never inside a surrogate pair", () => {
    const emoji = "😀".repeat(20); // 40 UTF-16 units
    const pieces = [...splitSentences(emoji, "en", 7)];
    expect(pieces.join("")).toBe(emoji);
    for (const piece of pieces) expect(piece.length).toBeLessThanOrEqual(7);
    for (const piece of pieces) expect(piece).toMatch(/^(😀)+$/u);
  });

  test("an unusual eSpeak language name falls back to default rules", () => {
    expect([...splitSentences("Un. Deux.", "not a locale!", 250)]).toEqual(["Un.", "Deux."]);
  });
});
