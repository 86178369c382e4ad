import { readFileSync, writeFileSync } from "node:fs";
import { ggufEntry, ggufFile, ggufString, readGgufParts } from "./gguf-metadata.js";
import { testModelPath } from "./models.js";

/**
 * Writes a reranker model for tests: ../shared/models holds none, and node-llama-cpp ranks only a model with a
 * classification head (`cls.output.weight`), which llama.cpp loads for the Qwen3 architecture among others. This one
 * is a Qwen3 of one layer (64-wide, 4 heads) with random weights from a fixed seed and stories260K's tokenizer, its
 * head answering two labels ("yes", "no") as Qwen3 rerankers do, pooled for ranking. Its scores are meaningless but
 * real: node-llama-cpp's ranking context computes them, deterministically, a different one for each document.
 */
export function writeTinyReranker(target: string): void {
  const tokenizer = readGgufParts(readFileSync(testModelPath()), "stories260K.gguf").kvs.filter((k) => k.name.startsWith("tokenizer.")).map((k) => k.bytes);
  const [E, HEADS, FF, VOCAB] = [64, 4, 128, 512];
  const head = E / HEADS;
  const kvs = [
    ggufEntry("general.architecture", "qwen3"),
    ggufEntry("general.name", "tiny-reranker-for-tests"),
    ggufEntry("general.alignment", { u32: 32 }),
    ggufEntry("qwen3.context_length", { u32: 2048 }),
    ggufEntry("qwen3.embedding_length", { u32: E }),
    ggufEntry("qwen3.block_count", { u32: 1 }),
    ggufEntry("qwen3.feed_forward_length", { u32: FF }),
    ggufEntry("qwen3.attention.head_count", { u32: HEADS }),
    ggufEntry("qwen3.attention.head_count_kv", { u32: HEADS }),
    ggufEntry("qwen3.attention.key_length", { u32: head }),
    ggufEntry("qwen3.attention.value_length", { u32: head }),
    ggufEntry("qwen3.attention.layer_norm_rms_epsilon", { f32: 1e-6 }),
    ggufEntry("qwen3.rope.freq_base", { f32: 10_000 }),
    // llama.cpp's pooling type 4: rank.
    ggufEntry("qwen3.pooling_type", { u32: 4 }),
    ggufEntry("qwen3.classifier.output_labels", ["yes", "no"]),
    ...tokenizer,
  ];
  const tensors: [string, number[]][] = [
    ["token_embd.weight", [E, VOCAB]],
    ["output_norm.weight", [E]],
    ["blk.0.attn_norm.weight", [E]],
    ["blk.0.attn_q.weight", [E, E]],
    ["blk.0.attn_k.weight", [E, E]],
    ["blk.0.attn_v.weight", [E, E]],
    ["blk.0.attn_output.weight", [E, E]],
    ["blk.0.attn_q_norm.weight", [head]],
    ["blk.0.attn_k_norm.weight", [head]],
    ["blk.0.ffn_norm.weight", [E]],
    ["blk.0.ffn_gate.weight", [E, FF]],
    ["blk.0.ffn_up.weight", [E, FF]],
    ["blk.0.ffn_down.weight", [FF, E]],
    // Last: node-llama-cpp looks for the head from the end.
    ["cls.output.weight", [E, 2]],
  ];
  // A linear congruential generator from a fixed seed: the same file every time.
  let seed = 42;
  const random = () => ((seed = (seed * 1_103_515_245 + 12_345) & 0x7fffffff) / 0x7fffffff - 0.5) * 0.2;
  const infos: Buffer[] = [];
  const data: Buffer[] = [];
  let offset = 0;
  for (const [name, dims] of tensors) {
    const count = dims.reduce((a, b) => a * b, 1);
    const values = Buffer.alloc(count * 4);
    // Norms' weights are ones; every other weight random (type 0: float32).
    for (let i = 0; i < count; i++) values.writeFloatLE(name.includes("norm") ? 1 : random(), i * 4);
    const info = Buffer.alloc(4 + dims.length * 8 + 4 + 8);
    info.writeUInt32LE(dims.length, 0);
    dims.forEach((d, i) => info.writeBigUInt64LE(BigInt(d), 4 + i * 8));
    info.writeUInt32LE(0, 4 + dims.length * 8);
    info.writeBigUInt64LE(BigInt(offset), 8 + dims.length * 8);
    infos.push(Buffer.concat([ggufString(name), info]));
    const padded = Buffer.concat([values, Buffer.alloc((32 - (values.length % 32)) % 32)]);
    data.push(padded);
    offset += padded.length;
  }
  writeFileSync(target, ggufFile(kvs, tensors.length, Buffer.concat(infos), Buffer.concat(data)));
}
