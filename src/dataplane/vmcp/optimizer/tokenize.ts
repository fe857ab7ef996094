/**
 * The search tokenizer, used for tool text at index time and for queries: splits on anything
 * that is not a letter or digit, splits camelCase / PascalCase / snake_case / kebab-case
 * identifiers into words, lower-cases, drops a small English stop-word list and applies a
 * light suffix stemmer (plural, -ing, -ed) so "emails" meets "email" and "sending" meets
 * "send". The reference uses SQLite FTS5's porter tokenizer; this one is smaller and needs no
 * native code.
 */

// Runs of letters/digits; inside one, the camelCase split below applies.
const WORD_RUN = /[\p{L}\p{N}]+/gu;
// "getHTTPResponse2" → get, HTTP, Response, 2; "ÉtéPlage" → Été, Plage.
const CAMEL_PART = /\p{Lu}+(?!\p{Ll})|\p{Lu}?\p{Ll}+|\p{N}+|[\p{L}\p{N}]+/gu;

/** Words too common in tool descriptions and questions to tell tools apart. */
export const STOP_WORDS: ReadonlySet<string> = new Set([
  'a',
  'about',
  'all',
  'an',
  'and',
  'any',
  'are',
  'as',
  'at',
  'be',
  'by',
  'can',
  'could',
  'do',
  'does',
  'for',
  'from',
  'has',
  'have',
  'how',
  'i',
  'if',
  'in',
  'into',
  'is',
  'it',
  'its',
  'me',
  'my',
  'of',
  'on',
  'or',
  'our',
  'should',
  'so',
  'some',
  'that',
  'the',
  'their',
  'then',
  'there',
  'these',
  'this',
  'to',
  'use',
  'want',
  'was',
  'we',
  'what',
  'when',
  'which',
  'will',
  'with',
  'would',
  'you',
  'your',
]);

/**
 * Light stemmer: strips common inflections (plural, -ing, -ed) and a final "e", so "create",
 * "creates", "created" and "creating" all become "creat". -ing/-ed go only when a vowel stays
 * ("string" keeps its "ing").
 */
export function stem(word: string): string {
  if (word.length <= 3) return word;
  return dropFinalE(stripSuffix(word));
}

function stripSuffix(word: string): string {
  const n = word.length;
  if (word.endsWith('ies') && n > 4) return `${word.slice(0, -3)}y`;
  if (word.endsWith('sses')) return word.slice(0, -2);
  if (word.endsWith('ing') && n > 5 && HAS_VOWEL.test(word.slice(0, -3))) return undouble(word.slice(0, -3));
  if (word.endsWith('ed') && n > 4 && !word.endsWith('eed') && HAS_VOWEL.test(word.slice(0, -2))) {
    return undouble(word.slice(0, -2));
  }
  if (word.endsWith('es') && n > 4 && /(?:ch|sh|x|z)es$/.test(word)) return word.slice(0, -2);
  if (word.endsWith('s') && !word.endsWith('ss') && !word.endsWith('us') && !word.endsWith('is')) {
    return word.slice(0, -1);
  }
  return word;
}

const HAS_VOWEL = /[aeiouy]/;

function dropFinalE(word: string): string {
  return word.length >= 4 && word.endsWith('e') && !word.endsWith('ee') ? word.slice(0, -1) : word;
}

// "running" → "runn" → "run"; "stopped" → "stopp" → "stop"; keeps "ll", "ss", "zz" ("called" → "call").
function undouble(word: string): string {
  const n = word.length;
  if (n >= 3 && word[n - 1] === word[n - 2] && !/[lsz]/.test(word[n - 1]!)) return word.slice(0, -1);
  return word;
}

/** Appends the search terms of `text` to `out` (in order, duplicates kept) and returns `out`. */
export function tokenize(text: string, out: string[] = []): string[] {
  for (const run of text.matchAll(WORD_RUN)) {
    const word = run[0];
    // Fast path: an all-lower-case run has no camelCase parts.
    if (word === word.toLowerCase()) {
      pushTerm(word, out);
      continue;
    }
    for (const part of word.matchAll(CAMEL_PART)) pushTerm(part[0].toLowerCase(), out);
  }
  return out;
}

function pushTerm(word: string, out: string[]): void {
  if (STOP_WORDS.has(word)) return;
  out.push(stem(word));
}
