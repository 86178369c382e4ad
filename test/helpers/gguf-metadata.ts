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

/**
 * Writes a copy of a GGUF model with one more metadata key (a uint32), the rest unchanged: the same tensors, their
 * data re-aligned after the longer header. How the test models' `stories260K-chat-template.gguf` was derived
 * (see ../shared/models/README.md), here to make a model that says it is for embeddings (`llama.pooling_type`).
 */
export function writeGgufWithUint32(source: string, target: string, key: string, value: number): void {
  const file = readFileSync(source);
  let at = 0;
  const u32 = () => ((at += 4), file.readUInt32LE(at - 4));
  const u64 = () => ((at += 8), Number(file.readBigUInt64LE(at - 8)));
  const skipString = () => {
    const length = u64();
    at += length;
  };
  const skipValue = (type: number): void => {
    if (type === STRING) return void skipString();
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
  const kvStart = at;
  let alignment = 32;
  for (let i = 0; i < kvCount; i++) {
    const keyLength = u64();
    const name = file.toString("utf8", at, at + keyLength);
    at += keyLength;
    const type = u32();
    if (name === "general.alignment" && type === UINT32) alignment = file.readUInt32LE(at);
    skipValue(type);
  }
  const kvEnd = at;
  for (let i = 0; i < tensorCount; i++) {
    skipString();
    const dims = u32();
    at += dims * 8 + 4 + 8;
  }
  const tensorsEnd = at;
  const dataStart = Math.ceil(tensorsEnd / alignment) * alignment;

  const header = Buffer.alloc(24);
  header.write("GGUF", 0, "latin1");
  header.writeUInt32LE(version, 4);
  header.writeBigUInt64LE(BigInt(tensorCount), 8);
  header.writeBigUInt64LE(BigInt(kvCount + 1), 16);
  const name = Buffer.from(key, "utf8");
  const added = Buffer.alloc(8 + name.length + 4 + 4);
  added.writeBigUInt64LE(BigInt(name.length), 0);
  name.copy(added, 8);
  added.writeUInt32LE(UINT32, 8 + name.length);
  added.writeUInt32LE(value, 12 + name.length);
  const head = Buffer.concat([header, file.subarray(kvStart, kvEnd), added, file.subarray(kvEnd, tensorsEnd)]);
  const padding = Buffer.alloc((alignment - (head.length % alignment)) % alignment);
  writeFileSync(target, Buffer.concat([head, padding, file.subarray(dataStart)]));
}
