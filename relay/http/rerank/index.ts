export { rerankCodec, rerankV2Codec } from "./rerank-codec.js";
export { decodeRerankRequest, type RerankRequest } from "./decode-rerank-request.js";
