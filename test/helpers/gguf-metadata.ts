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

/** One metadata entry of a type llama.cpp's split keys have: a uint16 or an int32. */
function ggufNumber(key: string, type: "u16" | "i32", value: number): Buffer {
  const body = Buffer.alloc(type === "u16" ? 2 : 4);
  if (type === "u16") body.writeUInt16LE(value);
  else body.writeInt32LE(value);
  const t = Buffer.alloc(4);
  t.writeUInt32LE(type === "u16" ? UINT16 : INT32);
  return Buffer.concat([ggufString(key), t, body]);
}

/**
 * Writes a GGUF model as llama.cpp's gguf-split does, in two parts (`<stem>-00001-of-00002.gguf` and `-00002-of-…`):
 * the first with the model's metadata and the first half of its tensors, the second with the rest; each says its
 * number (`split.no`), the parts' count and the tensors' count. llama.cpp loads it from the first part's path.
 * Returns the two paths.
 */
export function writeSplitGguf(source: string, stem: string): [string, string] {
  const parts = readGgufParts(readFileSync(source), source);
  // Each tensor's info: its name, dimensions, type and offset in the data.
  const infos: { bytes: Buffer; offset: number }[] = [];
  let at = 0;
  for (let i = 0; i < parts.tensorCount; i++) {
    const start = at;
    const nameLength = Number(parts.tensorInfos.readBigUInt64LE(at));
    at += 8 + nameLength;
    const dims = parts.tensorInfos.readUInt32LE(at);
    at += 4 + dims * 8 + 4;
    const offset = Number(parts.tensorInfos.readBigUInt64LE(at));
    at += 8;
    infos.push({ bytes: parts.tensorInfos.subarray(start, at), offset });
  }
  const half = Math.ceil(infos.length / 2);
  const [first, second] = [infos.slice(0, half), infos.slice(half)];
  const cut = second[0]!.offset;
  // The second part's offsets count from its own data (aligned, as the cut is).
  const moved = second.map(({ bytes, offset }) => {
    const copy = Buffer.from(bytes);
    copy.writeBigUInt64LE(BigInt(offset - cut), copy.length - 8);
    return copy;
  });
  const split = (no: number, tensors: number) => [ggufNumber("split.no", "u16", no), ggufNumber("split.count", "u16", 2), ggufNumber("split.tensors.count", "i32", tensors)];
  const paths: [string, string] = [`${stem}-00001-of-00002.gguf`, `${stem}-00002-of-00002.gguf`];
  writeFileSync(paths[0], ggufFile([...parts.kvs.map((k) => k.bytes), ...split(0, infos.length)], first.length, Buffer.concat(first.map((f) => f.bytes)), parts.data.subarray(0, cut), parts.alignment, parts.version));
  writeFileSync(paths[1], ggufFile([ggufEntry("general.alignment", { u32: parts.alignment }), ...split(1, infos.length)], second.length, Buffer.concat(moved), parts.data.subarray(cut), parts.alignment, parts.version));
  return paths;
}
