/**
 * Names whose value is a credential: the vault's secret types, names ending in API_KEY,
 * SECRET_KEY, ACCESS_KEY, API_TOKEN, AUTH_TOKEN or SUBSCRIPTION_KEY, and provider-named ones
 * (`MISTRAL_KEY`, `hfToken`, `mistral.api.key`), in any case and style.
 */
import { SECRET_TYPES } from "../protocol/secret-types.ts";

/** Names whose value is a credential, compared lower-cased without `_`, `.` and `-`. */
const CREDENTIAL_NAMES = new Set(SECRET_TYPES.map(normalizeName));
const CREDENTIAL_SUFFIXES = [
  "apikey",
  "secretkey",
  "accesskey",
  "apitoken",
  "authtoken",
  // Azure's API Management header (`Ocp-Apim-Subscription-Key`) and its SDKs' `subscriptionKey`.
  "subscriptionkey",
];

/**
 * Providers whose keys go by names like `MISTRAL_KEY` or `AZURE_OPENAI_KEY` (many have no prefix of
 * their own to recognise the key by): a name holding one of these as a word, or starting with one,
 * and ending in KEY, TOKEN, SECRET or PAT names a credential.
 */
const PROVIDER_WORDS = new Set([
  "ai21",
  "anthropic",
  "anyscale",
  "assemblyai",
  "azure",
  "baseten",
  "bfl",
  "cerebras",
  "claude",
  "cohere",
  "dashscope",
  "deepgram",
  "deepinfra",
  "deepseek",
  "elevenlabs",
  "fal",
  "fireworks",
  "gemini",
  "google",
  "grok",
  "groq",
  "hf",
  "huggingface",
  "hyperbolic",
  "ideogram",
  "jina",
  "kimi",
  "leonardo",
  "luma",
  "minimax",
  "mistral",
  "moonshot",
  "novita",
  "nvidia",
  "openai",
  "openrouter",
  "perplexity",
  "pinecone",
  "pplx",
  "qwen",
  "replicate",
  "runway",
  "runwayml",
  "sambanova",
  "stability",
  "suno",
  "together",
  "togetherai",
  "vertex",
  "voyage",
  "xai",
  "zhipu",
]);
/** Provider names long enough to count at the start of a name run together (`openaikey`). */
const PROVIDER_STEMS = [...PROVIDER_WORDS].filter((word) => word.length >= 5);
const CREDENTIAL_LAST_WORDS = new Set(["key", "token", "secret", "pat", "apikey"]);

function normalizeName(name: string): string {
  return name.toLowerCase().replace(/[_.-]/g, "");
}

/** `AZURE_OPENAI_KEY`, `hfToken`, `mistral-key-2` → lower-case words, numbers dropped at the end. */
function nameWords(name: string): string[] {
  const words = name.replace(/([a-z0-9])([A-Z])/g, "$1_$2").toLowerCase().split(/[^a-z0-9]+/)
    .filter((word) => word !== "");
  while (words.length > 0 && /^[0-9]+$/.test(words[words.length - 1])) words.pop();
  if (words.length > 0) words[words.length - 1] = words[words.length - 1].replace(/[0-9]+$/, "");
  return words;
}

/** Names seen, and whether each is a credential's: the same few names recur on every line. */
const credentialNameCache = new Map<string, boolean>();

export function isCredentialName(name: string): boolean {
  let known = credentialNameCache.get(name);
  if (known === undefined) {
    known = decideCredentialName(name);
    if (credentialNameCache.size >= 10_000) credentialNameCache.clear();
    credentialNameCache.set(name, known);
  }
  return known;
}

function decideCredentialName(name: string): boolean {
  const normalized = normalizeName(name);
  if (
    CREDENTIAL_NAMES.has(normalized) ||
    CREDENTIAL_SUFFIXES.some((suffix) => normalized.endsWith(suffix))
  ) {
    return true;
  }
  if (!/(?:key|token|secret|pat)[0-9]*$/.test(normalized)) return false;
  const words = nameWords(name);
  if (words.length < 2 || !CREDENTIAL_LAST_WORDS.has(words[words.length - 1])) return false;
  const joined = words.join("");
  return words.some((word) => PROVIDER_WORDS.has(word)) ||
    PROVIDER_STEMS.some((stem) => joined.startsWith(stem));
}
