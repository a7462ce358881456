/**
 * Splits an `--agent "<command line>"` value into argv the way a POSIX shell
 * would for simple commands: whitespace separates words, single quotes keep
 * everything literally, double quotes keep whitespace and honour `\"`, `\\`,
 * `\$` and `` \` ``, a backslash outside quotes escapes the next character.
 * No expansion, globbing or operators: the host spawns without a shell so an
 * operator's command line means the same thing on every machine.
 */
export function splitCommandLine(commandLine: string): string[] {
  const words: string[] = [];
  let word = "";
  let inWord = false;
  let quote: "'" | '"' | undefined;
  for (let i = 0; i < commandLine.length; i++) {
    const char = commandLine[i];
    if (quote === "'") {
      if (char === "'") quote = undefined;
      else word += char;
      continue;
    }
    if (quote === '"') {
      if (char === '"') quote = undefined;
      else if (char === "\\" && i + 1 < commandLine.length && '"\\$`'.includes(commandLine[i + 1])) word += commandLine[++i];
      else word += char;
      continue;
    }
    if (char === "'" || char === '"') {
      quote = char;
      inWord = true;
    } else if (char === "\\") {
      if (i + 1 < commandLine.length) word += commandLine[++i];
      inWord = true;
    } else if (/\s/.test(char)) {
      if (inWord) words.push(word);
      word = "";
      inWord = false;
    } else {
      word += char;
      inWord = true;
    }
  }
  if (quote) throw new Error(`Unterminated ${quote} quote in the agent command line.`);
  if (inWord) words.push(word);
  return words;
}
