import { readFileSync, writeFileSync } from "node:fs";

/** GGUF value types (the format's numbering). */
const UINT8 = 0;
const INT8 = 1;
const UINT16 = 2;
const INT16 = 3;
const UINT32 = 4;
const INT32 = 5;
const FLOAT32 = 6;
const BOOL = 7;
const STRING = 8;
const ARRAY = 9;
const UINT64 = 10;
const INT64 = 11;
const FLOAT64 = 12;
const SIZE: Record<number, number> = { [UINT8]: 1, [INT8]: 1, [UINT16]: 2, [INT16]: 2, [UINT32]: 4, [INT32]: 4, [FLOAT32]: 4, [BOOL]: 1, [UINT64]: 8, [INT64]: 8, [FLOAT64]: 8 };

/** A GGUF file's parts: its metadata entries (each as its bytes), and where its tensor infos and data are. */
export interface GgufParts {
  version: number;
  tensorCount: number;
  /** Each metadata entry: its key, and its bytes in the file (key, type and value), to be copied as they are. */
  kvs: { name: string; bytes: Buffer }[];
  /** The tensor infos' bytes, and the tensors' data (from the first aligned byte after the infos). */
  tensorInfos: Buffer;
  data: Buffer;
  alignment: number;
}

/** Reads a GGUF file's parts (its metadata entries, tensor infos and data), for test models made from it. */
export function readGgufParts(file: Buffer, source = "the file"): GgufParts {
  let at = 0;
  const u32 = () => ((at += 4), file.readUInt32LE(at - 4));
  const u64 = () => ((at += 8), Number(file.readBigUInt64LE(at - 8)));
  const skipValue = (type: number): void => {
    if (type === STRING) {
      // (Read first: `at += u64()` would add to `at` as it was before the length was read.)
      const length = u64();
      return void (at += length);
    }
    if (type === ARRAY) {
      const inner = u32();
      const count = u64();
      for (let i = 0; i < count; i++) skipValue(inner);
      return;
    }
    const size = SIZE[type];
    if (size === undefined) throw new Error(`unknown GGUF value type ${type}`);
    at += size;
  };
  if (file.toString("latin1", 0, 4) !== "GGUF") throw new Error(`${source} is not a GGUF file`);
  at = 4;
  const version = u32();
  const tensorCount = u64();
  const kvCount = u64();
  const kvs: GgufParts["kvs"] = [];
  let alignment = 32;
  for (let i = 0; i < kvCount; i++) {
    const start = at;
    const keyLength = u64();
    const name = file.toString("utf8", at, at + keyLength);
    at += keyLength;
    const type = u32();
    if (name === "general.alignment" && type === UINT32) alignment = file.readUInt32LE(at);
    skipValue(type);
    kvs.push({ name, bytes: file.subarray(start, at) });
  }
  const infosStart = at;
  for (let i = 0; i < tensorCount; i++) {
    const nameLength = u64();
    at += nameLength;
    const dims = u32();
    at += dims * 8 + 4 + 8;
  }
  const dataStart = Math.ceil(at / alignment) * alignment;
  return { version, tensorCount, kvs, tensorInfos: file.subarray(infosStart, at), data: file.subarray(dataStart), alignment };
}

/** A GGUF string: its length (u64), then its UTF-8 bytes. */
export function ggufString(text: string): Buffer {
  const bytes = Buffer.from(text, "utf8");
  const length = Buffer.alloc(8);
  length.writeBigUInt64LE(BigInt(bytes.length));
  return Buffer.concat([length, bytes]);
}

/** One metadata entry: a uint32, a float32, a string, or an array of strings. */
export function ggufEntry(key: string, value: { u32: number } | { f32: number } | string | string[]): Buffer {
  const typed = (type: number, body: Buffer) => {
    const t = Buffer.alloc(4);
    t.writeUInt32LE(type);
    return Buffer.concat([ggufString(key), t, body]);
  };
  if (typeof value === "string") return typed(STRING, ggufString(value));
  if (Array.isArray(value)) {
    const head = Buffer.alloc(12);
    head.writeUInt32LE(STRING, 0);
    head.writeBigUInt64LE(BigInt(value.length), 4);
    return typed(ARRAY, Buffer.concat([head, ...value.map(ggufString)]));
  }
  const body = Buffer.alloc(4);
  if ("u32" in value) body.writeUInt32LE(value.u32);
  else body.writeFloatLE(value.f32);
  return typed("u32" in value ? UINT32 : FLOAT32, body);
}

/** A whole GGUF file (version 3) from its metadata entries, tensor infos and data, the data aligned. */
export function ggufFile(kvs: Buffer[], tensorCount: number, tensorInfos: Buffer, data: Buffer, alignment = 32, version = 3): Buffer {
  const header = Buffer.alloc(24);
  header.write("GGUF", 0, "latin1");
  header.writeUInt32LE(version, 4);
  header.writeBigUInt64LE(BigInt(tensorCount), 8);
  header.writeBigUInt64LE(BigInt(kvs.length), 16);
  const head = Buffer.concat([header, ...kvs, tensorInfos]);
  return Buffer.concat([head, Buffer.alloc((alignment - (head.length % alignment)) % alignment), data]);
}

/**
 * Writes a copy of a GGUF model with one more metadata key (a uint32), the rest unchanged: the same tensors, their
 * data re-aligned after the longer header. How the test models' `stories260K-chat-template.gguf` was derived
 * (see ../shared/models/README.md), here to make a model that says it is for embeddings (`llama.pooling_type`).
 */
export function writeGgufWithUint32(source: string, target: string, key: string, value: number): void {
  const parts = readGgufParts(readFileSync(source), source);
  const kvs = [...parts.kvs.map((k) => k.bytes), ggufEntry(key, { u32: value })];
  writeFileSync(target, ggufFile(kvs, parts.tensorCount, parts.tensorInfos, parts.data, parts.alignment, parts.version));
}
