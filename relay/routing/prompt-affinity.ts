import type { ChatInput } from "../../proto/index.js";

/** 32-bit FNV-1a of a string's UTF-16 code units, from `seed`. */
function fnv1a(text: string, seed = 0x811c9dc5): number {
  let h = seed;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** A 32-bit finalizer (murmur3's): spreads nearby hashes apart. */
function mix(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

/**
 * Which requests go to the same replica, where their prompt is likely held already, as a hash: the client's
 * `cacheKey` (`prompt_cache_key`, else `user`, else Anthropic's `metadata.user_id`), else the conversation's
 * system prompt and first message (what every turn of it starts with). Undefined for embeddings and token
 * counts, which keep no prompt.
 */
export function promptAffinity(input: ChatInput, cacheKey: string | undefined): number | undefined {
  if (input.embed?.length || input.rerank || input.countOnly) return undefined;
  if (cacheKey) return fnv1a(cacheKey, 0x01234567);
  let system = "";
  let first = "";
  for (const m of input.messages) {
    if (m.role === "system" || m.role === "developer") system ||= m.content;
    else if (!first) {
      first = m.content;
      break;
    }
  }
  return fnv1a(first, fnv1a(system));
}

/** A replica's place for a request of `affinity` (rendezvous hashing): highest first, the same for every relay. */
export function rendezvousScore(affinity: number, stackId: string): number {
  return mix(fnv1a(stackId, affinity));
}
